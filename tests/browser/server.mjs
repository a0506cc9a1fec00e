// tests/browser/server.mjs: one headless chromium for a whole test script,
// so that each page driven connects to it instead of starting its own (a
// start and close cost more than most pages take to load and drive), and
// one node with playwright-core loaded, which drives the pages drive.mjs
// asks for (loading playwright-core takes most of a second each time).
//
// usage: node server.mjs SOCKET   prints "ws ENDPOINT" once the browser
// listens (page.mjs connects where BROWSER_WS=ENDPOINT), and takes requests
// from drive.mjs on the Unix socket SOCKET. The browser closes on SIGTERM,
// SIGINT, or when the process that started this one is gone.
import { chromium } from 'playwright-core';
import { createServer } from 'node:net';
import { rmSync } from 'node:fs';
import { drivePage, pageOpen } from './page.mjs';

const socket = process.argv[2];
const server = await chromium.launchServer({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu'],
});
const parent = process.ppid;
async function stop() {
  await server.close();
  if (socket) rmSync(socket, { force: true });
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
setInterval(() => {
  try {
    process.kill(parent, 0);
  } catch {
    stop();
  }
}, 1000);

// A request is one line of JSON, {cwd, argv}: page.mjs's arguments. The
// answer is lines "o FACT", then "x STATUS" (0, or 1 after "e MESSAGE").
// Each is driven as page.mjs would, on a connection of its own (closing
// it closes the request's window), one at a time.
let queue = Promise.resolve();
async function answer(conn, line) {
  try {
    const { cwd, argv } = JSON.parse(line);
    const browser = await chromium.connect(server.wsEndpoint());
    try {
      await drivePage(await pageOpen(browser), cwd, argv[0], argv.slice(1), (l) => conn.write(`o ${l}\n`));
    } finally {
      await browser.close();
    }
    conn.end('x 0\n');
  } catch (e) {
    conn.end(`e ${String(e && e.stack || e).replace(/\n/g, '\ne ')}\nx 1\n`);
  }
}
if (socket) {
  rmSync(socket, { force: true });
  createServer((conn) => {
    let got = '';
    conn.setEncoding('utf8');
    conn.on('data', (d) => {
      got += d;
      const nl = got.indexOf('\n');
      if (nl < 0) return;
      const line = got.slice(0, nl);
      got = '';
      queue = queue.then(() => answer(conn, line));
    });
  }).listen(socket, () => console.log(`ws ${server.wsEndpoint()}`));
} else {
  console.log(`ws ${server.wsEndpoint()}`);
}

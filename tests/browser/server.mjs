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
// Each is driven as page.mjs would, one at a time, in one window kept
// from one request to the next; a request that fails closes it (a drag
// may have left a button down), and the next opens another. A request
// that moves the mouse itself (drag, hover) gets a window of its own,
// closed after it: under load, raw mouse events once stopped reaching
// the page in a kept window, for every such request after.
let queue = Promise.resolve(), browser = null, window = null;
async function answer(conn, line) {
  try {
    const { cwd, argv } = JSON.parse(line);
    if (!window) {
      browser = await chromium.connect(server.wsEndpoint());
      window = await pageOpen(browser, true);
    }
    const pointer = argv.slice(1).some((s) => /^(drag|hover):/.test(s));
    try {
      await drivePage(pointer ? await pageOpen(browser) : window, cwd, argv[0], argv.slice(1), (l) => conn.write(`o ${l}\n`));
    } catch (e) {
      window = null;
      await browser.close();
      throw e;
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

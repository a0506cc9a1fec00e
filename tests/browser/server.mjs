// tests/browser/server.mjs: one headless chromium for a whole test script,
// so that each page.mjs run connects to it instead of starting its own
// (a start and close cost more than most pages take to load and drive).
//
// usage: node server.mjs   prints "ws ENDPOINT" once the browser listens;
// page.mjs connects where BROWSER_WS=ENDPOINT. The browser closes on
// SIGTERM, SIGINT, or when the process that started this one is gone.
import { chromium } from 'playwright-core';

const server = await chromium.launchServer({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu'],
});
const parent = process.ppid;
async function stop() {
  await server.close();
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
console.log(`ws ${server.wsEndpoint()}`);

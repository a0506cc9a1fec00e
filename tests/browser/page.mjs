// tests/browser/page.mjs: drive a report --html page in Debian's chromium
// as a person would, and print what it shows, a fact a line, for the shell
// tests to hold against the analyzer's own figures.
//
// usage: node page.mjs PAGE.html STEP...   (in the browser server.mjs runs,
// where BROWSER_WS names it; drive.mjs asks server.mjs to run the same
// steps without loading playwright-core again)
//   load               open the page in a 1400x900 window: "errors N" (console
//                      errors and uncaught exceptions, each also printed as
//                      "error: ..."), "requests N" (anything but the file
//                      itself and data: URIs), "load_ms N", and in the page's
//                      clock "drawn_ms N" (its views drawn), "script_ms N" (what
//                      its script took to draw them) and "load_event_ms N"
//   drag:ID:F1:F2      drag the mouse across element #ID from F1 to F2 of its
//                      width (fractions), again until the page's address
//                      fragment changes (three times at most)
//   click:SCOPE:TEXT   click the first function link (a.fn) in #SCOPE whose
//                      text is TEXT
//   frame:ID:NAME      click the frame NAME (its own name, not a part of it) in
//                      the flame graph the page holds in object #ID
//   press:SEL          click the first element matching SEL
//   select:SEL:VALUE   choose VALUE in the first select matching SEL
//   text:SEL           "text SEL: ..." the element's text
//   attr:SEL:NAME      "attr SEL NAME: ..." the element's attribute
//   rows:SEL           "row SEL: V1 V2 ..." for each row of the table SEL but
//                      its head: the data-value of its cells that have one
//   hash               "hash: ..." the page's address after #
//   box:SEL            "box SEL: X Y" where the first element matching SEL is drawn
//   tree:SEL           "tree SEL: DEPTH NAME [open|closed]" for each row of the tree
//                      table SEL, in order (DEPTH from 0)
//   totals:SEL         "totals SEL: METRIC VALUE ..." the tree table SEL's totals row
//   hover:ID:F[:G]     move the mouse over element #ID at F of its width and G of
//                      its height (default 0.5), again until the page has it
//                      under the pointer (three times at most)
//   key:KEY            press KEY (Playwright's names: ArrowRight, *, Enter)
//   focus:SEL          focus the first element matching SEL
//   fill:SEL:VALUE     type VALUE into the input SEL and press Enter
//   texts:SEL          "texts SEL: A|B|..." the text of every element matching SEL
//   values:SEL         "values SEL: V1 V2 ..." the data-value of every element matching SEL
//   shot:SEL:FILE      a screenshot of the first element matching SEL into FILE
//   views              for every view (a section or graph with an id): "view
//                      ID pixels N right R", N the pixels of its screenshot
//                      that are not the page's white, R where it ends on the
//                      right; then "scroll_width W" of the whole page
import { chromium } from 'playwright-core';
import { inflateSync } from 'node:zlib';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

// The pixels of a PNG (8-bit RGB or RGBA, not interlaced, as chromium
// writes them) that are not white.
function inked(png) {
  let pos = 8, w = 0, h = 0, type = 0;
  const idat = [];
  while (pos < png.length) {
    const len = png.readUInt32BE(pos), kind = png.toString('latin1', pos + 4, pos + 8);
    const data = png.subarray(pos + 8, pos + 8 + len);
    if (kind === 'IHDR') { w = data.readUInt32BE(0); h = data.readUInt32BE(4); type = data[9]; }
    else if (kind === 'IDAT') idat.push(data);
    pos += 12 + len;
  }
  const bpp = type === 6 ? 4 : 3, raw = inflateSync(Buffer.concat(idat)), stride = w * bpp;
  let prev = Buffer.alloc(stride), n = 0;
  for (let y = 0; y < h; y++) {
    const f = raw[y * (stride + 1)], line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? line[i - bpp] : 0, b = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
      let p = 0;
      if (f === 1) p = a;
      else if (f === 2) p = b;
      else if (f === 3) p = (a + b) >> 1;
      else if (f === 4) {
        const q = a + b - c, pa = Math.abs(q - a), pb = Math.abs(q - b), pc = Math.abs(q - c);
        p = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      line[i] = (line[i] + p) & 255;
    }
    for (let x = 0; x < w; x++)
      if (line[x * bpp] < 240 || line[x * bpp + 1] < 240 || line[x * bpp + 2] < 240) n++;
    prev = line;
  }
  return n;
}

// The document of the graph the page holds in object #id: scrolled to, it
// is loaded (the page loads its graphs as they come near the window), and
// it is a frame of the page known by its address.
async function graphFrame(page, id) {
  await page.locator('#' + id).scrollIntoViewIfNeeded();
  await page.waitForFunction((i) => document.getElementById(i).getAttribute('data'), id);
  const data = await page.locator('#' + id).getAttribute('data');
  for (let i = 0; i < 200; i++) {
    const f = page.frames().find((x) => x.url() === data);
    if (f) { await f.waitForLoadState('load'); return f; }
    await page.waitForTimeout(50);
  }
  throw new Error(`graph #${id} did not load`);
}

// Where element sel is drawn once the page has stopped moving it: a graph
// loading above it, or the page still laying out under load, would move
// the element between the look and the mouse's press.
async function steadyBox(page, sel) {
  const el = page.locator(sel);
  await el.scrollIntoViewIfNeeded();
  let box = await el.boundingBox();
  for (let i = 0; i < 40; i++) {
    await page.waitForTimeout(50);
    const now = await el.boundingBox();
    if (now && box && now.x === box.x && now.y === box.y && now.width === box.width && now.height === box.height)
      return now;
    box = now;
  }
  return box;
}

// A fresh window: a context of its own in browser, and its page. With
// keep, drivePage leaves it open on a blank page for the next drive: a new
// window costs the browser more than a page's load (a renderer started,
// about 1.4 s of CPU), and the report keeps nothing in storage that one
// drive could leave to the next.
export async function pageOpen(browser, keep = false) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  return { context, page: await context.newPage(), keep };
}

// Drive the page at path file (from directory cwd) through steps in the
// window pageOpen made, print(line) each fact; the window is closed at the
// end, or left blank when it is kept.
export async function drivePage(window, cwd, file, steps, print) {
  const { context, page } = window;
  const errors = [], requests = [], url = pathToFileURL(resolve(cwd, file)).href;
  const on = {
    console: (m) => { if (m.type() === 'error') errors.push(m.text()); },
    pageerror: (e) => errors.push(String(e)),
    request: (r) => {
      const u = r.url();
      if (!u.startsWith('data:') && u.split('#')[0] !== url) requests.push(u);
    },
  };
  for (const [event, f] of Object.entries(on)) page.on(event, f);
  try {
    for (const step of steps) {
      const [what, ...arg] = step.split(':');
      if (what === 'load') {
        const t0 = Date.now();
        await page.goto(url + (arg.length ? '#' + arg.join(':') : ''), { waitUntil: 'load' });
        print(`load_ms ${Date.now() - t0}`);
        // In the page's own clock: its script done drawing, and the load event.
        const t = await page.evaluate(() => {
          const m = performance.getEntriesByName('memsight-drawn')[0], n = performance.getEntriesByType('navigation')[0];
          const s = performance.getEntriesByName('memsight-start')[0];
          return [m ? Math.round(m.startTime) : -1, n ? Math.round(n.loadEventStart) : -1, m && s ? Math.round(m.startTime - s.startTime) : -1];
        });
        print(`drawn_ms ${t[0]}`);
        print(`script_ms ${t[2]}`);
        print(`load_event_ms ${t[1]}`);
      } else if (what === 'drag') {
        // Under load a gesture's mouse events have been lost on their way
        // to the page: it is made again, three times at most, until the
        // page takes it (a drag changes the address's fragment).
        const before = await page.evaluate(() => location.hash);
        for (let tries = 0; tries < 3; tries++) {
          const box = await steadyBox(page, '#' + arg[0]);
          await page.mouse.move(box.x + box.width * Number(arg[1]), box.y + box.height / 2);
          await page.mouse.down();
          await page.mouse.move(box.x + box.width * Number(arg[2]), box.y + box.height / 2, { steps: 8 });
          await page.mouse.up();
          try {
            await page.waitForFunction((h) => location.hash !== h, before, { timeout: 2000 });
            break;
          } catch (e) {
            print(`drag not taken, made again`);
          }
        }
      } else if (what === 'click') {
        await page.locator(`#${arg[0]} a.fn`, { hasText: new RegExp('^' + arg.slice(1).join(':').replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$') }).first().click();
      } else if (what === 'frame') {
        const name = arg.slice(1).join(':').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        const graph = await graphFrame(page, arg[0]);
        await graph.locator('g.f').filter({ has: graph.locator('title', { hasText: new RegExp('^' + name + ' \\(') }) })
          .first().locator('rect').click();
      } else if (what === 'press') {
        await page.locator(arg.join(':')).first().click();
      } else if (what === 'select') {
        await page.locator(arg[0]).first().selectOption(arg[1]);
      } else if (what === 'text') {
        print(`text ${arg.join(':')}: ${(await page.locator(arg.join(':')).first().textContent()).replace(/\s+/g, ' ').trim()}`);
      } else if (what === 'attr') {
        const sel = arg.slice(0, -1).join(':'), name = arg[arg.length - 1];
        print(`attr ${sel} ${name}: ${await page.locator(sel).first().getAttribute(name)}`);
      } else if (what === 'rows') {
        const sel = arg.join(':');
        const rows = await page.evaluate((q) => Array.from(document.querySelectorAll(q + ' tr')).slice(1)
          .map((r) => Array.from(r.cells).map((c) => c.getAttribute('data-value')).filter((v) => v !== null).join(' ')), sel);
        for (const r of rows) print(`row ${sel}: ${r}`);
      } else if (what === 'box') {
        const sel = arg.join(':'), b = await page.locator(sel).first().boundingBox();
        print(`box ${sel}: ${Math.round(b.x)} ${Math.round(b.y)}`);
      } else if (what === 'tree') {
        const sel = arg.join(':');
        const rows = await page.evaluate((q) => Array.from(document.querySelectorAll(q + ' tbody tr')).map((r) =>
          r.getAttribute('data-depth') + ' ' + r.querySelector('a.fn').textContent +
          (r.hasAttribute('aria-expanded') ? (r.getAttribute('aria-expanded') === 'true' ? ' open' : ' closed') : '')), sel);
        for (const r of rows) print(`tree ${sel}: ${r}`);
      } else if (what === 'totals') {
        const sel = arg.join(':');
        const v = await page.evaluate((q) => {
          const t = document.querySelector(q), heads = Array.from(t.tHead.rows[0].cells).slice(1);
          const cells = Array.from(t.tHead.rows[1].cells).slice(1);
          return heads.map((h, i) => h.getAttribute('data-metric') + ' ' + cells[i].getAttribute('data-value')).join(' ');
        }, sel);
        print(`totals ${sel}: ${v}`);
      } else if (what === 'hover') {
        // As a drag's, a move's event can be lost under load: made again,
        // a pixel aside, until the element is under the pointer as the
        // page sees it (:hover), three times at most.
        for (let tries = 0; tries < 3; tries++) {
          const box = await steadyBox(page, '#' + arg[0]);
          await page.mouse.move(box.x + box.width * Number(arg[1]) + tries, box.y + box.height * Number(arg[2] || 0.5));
          try {
            await page.waitForFunction((id) => document.getElementById(id).matches(':hover'), arg[0], { timeout: 2000 });
            break;
          } catch (e) {
            print(`hover not taken, made again`);
          }
        }
      } else if (what === 'key') {
        await page.keyboard.press(arg.join(':'));
      } else if (what === 'focus') {
        await page.locator(arg.join(':')).first().focus();
      } else if (what === 'fill') {
        await page.locator(arg[0]).first().fill(arg.slice(1).join(':'));
        await page.locator(arg[0]).first().press('Enter');
      } else if (what === 'texts') {
        const sel = arg.join(':');
        const t = await page.evaluate((q) => Array.from(document.querySelectorAll(q)).map((e) => e.textContent.replace(/\s+/g, ' ').trim()), sel);
        print(`texts ${sel}: ${t.join('|')}`);
      } else if (what === 'values') {
        const sel = arg.join(':');
        const v = await page.evaluate((q) => Array.from(document.querySelectorAll(q)).map((e) => e.getAttribute('data-value')), sel);
        print(`values ${sel}: ${v.join(' ')}`);
      } else if (what === 'shot') {
        const el = page.locator(arg[0]).first();
        await el.scrollIntoViewIfNeeded();
        await el.screenshot({ path: resolve(cwd, arg.slice(1).join(':')) });
      } else if (what === 'hash') {
        print(`hash: ${await page.evaluate(() => location.hash.slice(1))}`);
      } else if (what === 'views') {
        const ids = await page.evaluate(() => Array.from(document.querySelectorAll('section[id], pre[id], object[id]'))
          .filter((e) => e.getBoundingClientRect().height > 0).map((e) => e.id));
        for (const id of ids) {
          const el = page.locator(`[id="${id}"]`);
          await el.scrollIntoViewIfNeeded();
          if (await el.evaluate((e) => e.tagName === 'OBJECT')) await graphFrame(page, id);
          const box = await el.boundingBox();
          const shot = await page.screenshot({ clip: { x: box.x, y: Math.max(0, box.y), width: Math.min(box.width, 1400 - box.x), height: Math.min(box.height, 900) } });
          print(`view ${id} pixels ${inked(shot)} right ${Math.ceil(box.x + box.width)}`);
        }
        print(`scroll_width ${await page.evaluate(() => document.documentElement.scrollWidth)}`);
      } else {
        throw new Error(`unknown step '${step}'`);
      }
    }
    for (const e of errors) print(`error: ${e}`);
    for (const r of requests) print(`request: ${r}`);
    print(`errors ${errors.length}`);
    print(`requests ${requests.length}`);
  } finally {
    for (const [event, f] of Object.entries(on)) page.off(event, f);
    // The next page finds the pointer in a corner, over nothing; and a
    // load of its address with another #hash would otherwise only move
    // within this one.
    if (window.keep) {
      await page.mouse.move(0, 0);
      await page.goto('about:blank');
    } else {
      await context.close();
    }
  }
}

// Run as a program: drive one page in the browser at BROWSER_WS, or in a
// chromium of its own.
if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, ...steps] = process.argv.slice(2);
  const browser = process.env.BROWSER_WS ? await chromium.connect(process.env.BROWSER_WS) : await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu'],
  });
  try {
    await drivePage(await pageOpen(browser), process.cwd(), file, steps, (l) => console.log(l));
  } finally {
    await browser.close();
  }
}

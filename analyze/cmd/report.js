(function () {
  var d = JSON.parse(document.getElementById('data').textContent);
  function bytes(v) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (v >= 1024 && i < 4) { v /= 1024; i++; }
    return i ? v.toFixed(1) + ' ' + u[i] : v + ' B';
  }
  function secs(t) { return t < 1 ? (t * 1000).toFixed(1) + ' ms' : t < 120 ? t.toFixed(1) + ' s' : (t / 60).toFixed(1) + ' min'; }
  function count(n, what) { return n.toLocaleString('en') + ' ' + what + (n === 1 ? '' : 's'); }
  function add(parent, tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    parent.appendChild(e);
    return e;
  }
  /* The first frame past the allocation functions: where a block was asked for. */
  var alloc = /^(malloc|calloc|realloc|reallocarray|free|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|operator new.*|operator delete.*)$/;
  function site(frames) {
    for (var i = 0; i < frames.length; i++)
      if (frames[i].function && !alloc.test(frames[i].function)) return frames[i].function;
    return frames.length ? frames[0].function || '?' : '(no stack)';
  }
  var sum = document.getElementById('summary'), t = add(sum, 'table', undefined, 'summary');
  function row(key, value, id) {
    var r = add(t, 'tr');
    add(r, 'th', key);
    var c = add(r, 'td', value);
    if (id) c.id = id;
    return c;
  }
  var i = d.info;
  if (i) {
    row('Recorded', i.recorded_by || i.target || '');
    row('For', secs(i.duration_s || 0) + ', ' + count(i.samples || 0, 'event') + ' kept');
    row('Lost', i.lost ? count(i.lost, 'event') + ' lost: every figure counts only those kept' : 'nothing', 'sum-lost');
    if (i.flight) row('Window', 'This file is ' + i.flight, 'sum-window');
  }
  var e = d.errors;
  if (e && e.errors.length) {
    var kinds = {};
    e.errors.forEach(function (x) { kinds[x.kind] = (kinds[x.kind] || 0) + 1; });
    row('Memory errors', Object.keys(kinds).map(function (k) { return kinds[k] + ' ' + k; }).join(', '), 'sum-errors');
  }
  var l = d.leaks;
  if (l) {
    var c = row('Leaked', bytes(l.leaked_bytes) + ' in ' + count(l.leaked_allocations, 'allocation') +
                (l.estimate ? ' (estimated)' : ''), 'sum-leaked');
    c.setAttribute('data-bytes', l.leaked_bytes);
    /* With --leak-check, the kinds valgrind reports: lost and reachable. */
    var lk = l.leak_check;
    if (lk && lk.processes)
      row('Leak check', ['definitely_lost', 'indirectly_lost', 'possibly_lost', 'still_reachable'].map(function (k) {
        return k.replace('_', ' ') + ' ' + bytes(lk[k + '_bytes']) + ' in ' + count(lk[k + '_allocations'], 'block');
      }).join(', '), 'sum-leak-check');
    l.stacks.slice(0, 3).forEach(function (s, k) {
      row(k ? '' : 'Top stacks', bytes(s.bytes) + ' in ' + count(s.allocations, 'allocation') + ' from ' + site(s.frames) +
          ' (pid ' + s.pid + ' ' + s.comm + ')' + (s.kind && s.kind !== 'unknown' ? ', ' + s.kind.replace('_', ' ') : ''));
    });
  }
  var m = d.report && d.report.malloc, drawSizes = null;
  if (m && m.peak && m.peak.bytes)
    row('Peak heap', bytes(m.peak.bytes) + ' at +' + secs(m.peak.time_s || 0), 'sum-peak');
  if (m) {
    var calls = 0, temp = 0, sampled = false;
    m.processes.forEach(function (p) {
      calls += p.calls;
      if (p.temporary === null) sampled = true; else temp += p.temporary;
    });
    row('Temporary', sampled ? 'not estimated from a sampled recording' :
        count(temp, 'allocation') + ' of ' + calls.toLocaleString('en') +
        ' freed right after an allocation of the same stack and size (as heaptrack counts them)',
        'sum-temporary');
    /* Allocations by size: a bar for each power of two; redrawn for a window. */
    var sizesSec = document.getElementById('sizes');
    drawSizes = function (list) {
      var old = document.getElementById('sizes-table');
      if (old) old.remove();
      var st = add(sizesSec, 'table', undefined, 'leaks'), most = 1;
      sizesSec.insertBefore(st, sizesSec.firstChild);
      st.id = 'sizes-table';
      list.forEach(function (c) { if (c.allocations > most) most = c.allocations; });
      var hr = add(st, 'tr');
      ['size', 'allocations', 'bytes', ''].forEach(function (h) { add(hr, 'th', h); });
      list.forEach(function (c) {
        var r = add(st, 'tr');
        add(r, 'td', c.up_to === null ? 'larger' : 'up to ' + bytes(c.up_to));
        add(r, 'td', c.allocations.toLocaleString('en')).setAttribute('data-value', c.allocations);
        add(r, 'td', bytes(c.bytes)).setAttribute('data-value', c.bytes);
        var bar = add(add(r, 'td'), 'div', undefined, 'bar');
        bar.style.width = Math.max(1, Math.round(300 * c.allocations / most)) + 'px';
      });
    };
    drawSizes(m.sizes);
  }
  /* The memory errors, a row each: what, where it happened, and the
   * stacks that made and freed the block where there is one. The text
   * below the table is memsight errors' own. */
  var er = d.errors, esec = document.getElementById('errors-table-sec');
  if (er && er.errors.length && esec) {
    var et = add(esec, 'table', undefined, 'leaks');
    et.id = 'errors-table';
    var eh = add(et, 'tr');
    ['kind', 'at', 'process', 'address', 'where', 'made in', 'freed in', ''].forEach(function (h) { add(eh, 'th', h); });
    var fnCell = function (r, frames) {
      var c = add(r, 'td');
      if (frames && frames.length) { var a = add(c, 'a', site(frames), 'fn'); a.href = '#callers-head'; }
      return c;
    };
    er.errors.forEach(function (x) {
      var r = add(et, 'tr');
      add(r, 'td', x.kind);
      add(r, 'td', '+' + secs(x.time_s || 0));
      add(r, 'td', 'pid ' + x.pid + ' ' + x.comm + (x.signal ? ', ' + x.signal : ''));
      add(r, 'td', x.address !== undefined && x.address !== null ? '0x' + x.address.toString(16) : '');
      fnCell(r, x.frames);
      fnCell(r, x.alloc_frames);
      fnCell(r, x.free_frames);
      add(r, 'td', x.proven === false ? 'not proven' : '');
    });
  }

  /* Two traces: what changed, as memsight diff weighs it, largest growth
   * first. */
  var df = d.diff, dsec = document.getElementById('diff');
  if (df && dsec) {
    var inBytes = df.weight !== 'count';
    var dv = function (v) { return inBytes ? bytes(Math.abs(v)) : Math.abs(v).toLocaleString('en'); };
    var signed = function (v) { return (v > 0 ? '+' : v < 0 ? '\u2212' : '') + dv(v); };
    var dp = add(dsec, 'p', 'By ' + df.event + ', weighted by ' + df.weight + ': ' + dv(df.base_total) + ' before, ' +
        dv(df.new_total) + ' now, ' + signed(df.delta) + ((df.base_estimate || df.new_estimate) ? ' (estimates)' : '') + '.');
    dp.id = 'diff-total';
    dp.setAttribute('data-value', df.delta);
    var dt = add(dsec, 'table', undefined, 'leaks');
    dt.id = 'diff-table';
    var dh = add(dt, 'tr');
    ['change', 'before', 'now', '', 'where'].forEach(function (h) { add(dh, 'th', h); });
    df.stacks.forEach(function (x) {
      var r = add(dt, 'tr');
      add(r, 'td', signed(x.delta)).setAttribute('data-value', x.delta);
      add(r, 'td', dv(x.base));
      add(r, 'td', dv(x.new));
      add(r, 'td', x.status === 'new' || x.status === 'gone' ? x.status : '');
      var c = add(r, 'td'), fa = add(c, 'a', site(x.frames), 'fn');
      fa.href = '#callers-head';
      add(c, 'span', ' (' + x.comm + ')');
    });
  }

  /* The page's state, which its address keeps (a permalink):
   * #window=A,B (buckets of the stacks' timeline), metric=M, callers=NAME. */
  var state = { window: null, metric: null, callers: null };
  function stateRead() {
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var k = kv.split('=')[0], v = decodeURIComponent(kv.slice(k.length + 1));
      if (k === 'window' && /^[0-9]+,[0-9]+$/.test(v)) state.window = v.split(',').map(Number);
      else if (k === 'metric' || k === 'callers') state[k] = v;
    });
  }
  function stateWrite() {
    var h = [];
    if (state.window) h.push('window=' + state.window.join(','));
    if (state.metric) h.push('metric=' + state.metric);
    if (state.callers !== null) h.push('callers=' + encodeURIComponent(state.callers));
    history.replaceState(null, '', h.length ? '#' + h.join('&') : location.pathname + location.search);
  }
  stateRead();
  var ns = 'http://www.w3.org/2000/svg';
  function mk(tag, attrs, parent) {
    var e = document.createElementNS(ns, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    parent.appendChild(e);
    return e;
  }
  function maxOf(a) { var m = 1; a.forEach(function (v) { if (v > m) m = v; }); return m; }

  /* The stacks, each with what it did in each bucket (report's
   * stack_timeline): a window of buckets sums to what leaks --time and
   * faults --time count for it. */
  var stl = d.report && d.report.stack_timeline, paths = [];
  if (stl) {
    var toPath = function (x, frames) {
      var fr = frames.slice();
      /* a block is its asker's: the allocation functions above it left out */
      while (x.made.length && fr.length > 1 && alloc.test(fr[0])) fr.shift();
      return { f: fr, pid: x.pid, comm: x.comm, made: x.made, live: x.live, faults: x.faults, peak: x.peak_bytes || 0 };
    };
    stl.stacks.forEach(function (x) {
      paths.push(toPath(x, x.f.map(function (i) { return stl.names[i]; })));
    });
    if (stl.other.stacks)
      paths.push(toPath(stl.other, ['(' + stl.other.stacks.toLocaleString('en') + ' other stacks)']));
  }
  var nb = stl ? Math.max(stl.buckets, 1) : 1;
  /* What a tree can weigh by: its label, what the whole recording's
   * total is, and a window's. */
  var metrics = {
    leaked: { unit: 'bytes', label: 'leaked', title: 'leaked (held at the end)', inWindow: 'made in the window and not freed in it' },
    allocated: { unit: 'bytes', label: 'allocated', title: 'allocated', inWindow: 'allocated in the window' },
    calls: { unit: 'allocations', label: 'calls', title: 'made', inWindow: 'made in the window' },
    peak: { unit: 'bytes', label: 'peak', title: 'held at the heap\'s peak', inWindow: 'held at the heap\'s peak (the whole recording\'s)' },
    faults: { unit: 'faults', label: 'faults', title: 'taken', inWindow: 'taken in the window' }
  };
  function titleOf(m) { return state.window ? metrics[m].inWindow : metrics[m].title; }
  /* What a path weighs by metric m in buckets [a, b). */
  function weigh(p, m, a, b) {
    var t = 0;
    if (m === 'leaked') p.live.forEach(function (c) { if (c[0] >= a && c[0] < b && (c[1] === null || c[1] >= b)) t += c[2]; });
    else if (m === 'allocated') p.made.forEach(function (c) { if (c[0] >= a && c[0] < b) t += c[1]; });
    else if (m === 'calls') p.made.forEach(function (c) { if (c[0] >= a && c[0] < b) t += c[2]; });
    else if (m === 'faults') p.faults.forEach(function (c) { if (c[0] >= a && c[0] < b) t += c[1]; });
    else if (m === 'peak') t = p.peak;
    return t;
  }
  var have = {};
  paths.forEach(function (p) {
    if (p.made.length) { have.allocated = have.calls = have.leaked = true; }
    if (p.peak) have.peak = true;
    if (p.faults.length) have.faults = true;
  });
  var metricList = ['leaked', 'allocated', 'calls', 'peak', 'faults'].filter(function (m) { return have[m]; });
  if (!state.metric || metricList.indexOf(state.metric) < 0) state.metric = metricList[0] || null;
  function fmtBy(m, v) {
    return metrics[m].unit === 'bytes' ? bytes(v) : v.toLocaleString('en') + ' ' + (metrics[m].unit === 'faults' ? 'faults' : 'allocations');
  }
  function win() { return state.window || [0, nb]; }
  /* A --time for buckets [a, b): from the first bucket's start to the ns
   * before the next one's, as the analyzer counts a window (both ends in). */
  function nsText(v) {
    var s = Math.floor(v / 1e9), r = String(v - s * 1e9);
    return s + '.' + '000000000'.slice(r.length) + r;
  }
  function timeArg(a, b) {
    return nsText(a ? stl.start_ns + a * stl.bucket_ns : 0) + ',' + nsText(stl.start_ns + b * stl.bucket_ns - 1);
  }

  /* Over time: faults as bars, the heap as a line, brk growth summed, and
   * below them what the heaviest stacks held; a drag selects a window. */
  var tl = d.report && d.report.timeline, tsec = document.getElementById('timeline');
  var W = 1000, H = 160, sel = null, rangeOut = null, setSel = function () {};
  if (tl && tl.faults.length) {
    var n = tl.faults.length, bw = W / n;
    var svg = mk('svg', { id: 'timeline-chart', viewBox: '0 0 ' + W + ' ' + (H + 24), width: '100%' }, tsec);
    var fm = maxOf(tl.faults);
    tl.faults.forEach(function (v, i) {
      if (v) mk('rect', { x: i * bw, y: H - H * v / fm, width: Math.max(bw - 0.5, 0.5), height: H * v / fm, fill: '#8ab0dc' }, svg);
    });
    var line = function (vals, color, id) {
      var m = maxOf(vals), pts = vals.map(function (v, i) { return (i * bw + bw / 2).toFixed(1) + ',' + (H - H * v / m).toFixed(1); });
      mk('polyline', { id: id, points: pts.join(' '), fill: 'none', stroke: color, 'stroke-width': 2 }, svg);
      return m;
    };
    var legend = tl.faults.some(function (v) { return v > 0; }) ? ['page faults: bars, up to ' + fm.toLocaleString('en') + ' a bucket'] : [];
    if (tl.heap_bytes) legend.push('malloc heap in use: red, up to ' + bytes(line(tl.heap_bytes, '#c33', 'timeline-heap')));
    if (tl.rss_bytes) legend.push('resident memory (rss_stat): purple, up to ' + bytes(line(tl.rss_bytes, '#84b', 'timeline-rss')));
    var grew = 0, grown = tl.brk_bytes.map(function (v) { return grew += v; });
    if (grew) legend.push('brk growth so far: green, ' + bytes(line(grown, '#393', 'timeline-brk')));
    var end = tl.start_s + n * tl.bucket_s;
    mk('text', { x: 0, y: H + 18, 'font-size': 12 }, svg).textContent = '+' + secs(tl.start_s);
    mk('text', { x: W, y: H + 18, 'font-size': 12, 'text-anchor': 'end' }, svg).textContent = '+' + secs(end);
    add(tsec, 'p', legend.join('; ') + '.');
    /* The stacks' buckets are the timeline's, or whole numbers of them. */
    var per = stl ? Math.max(1, Math.round(stl.bucket_ns / (tl.bucket_s * 1e9))) : 1, sw = bw * per;
    if (stl && paths.length) {
      /* What the heaviest stacks held at the end of each bucket, stacked;
       * the rest summed. Faults when nothing was allocated. */
      var byHeld = have.leaked, series = paths.map(function (p) {
        var v = new Array(nb).fill(0);
        if (byHeld) p.live.forEach(function (c) { for (var k = c[0]; k < (c[1] === null ? nb : c[1]); k++) v[k] += c[2]; });
        else p.faults.forEach(function (c) { v[c[0]] += c[1]; });
        return { p: p, v: v, top: maxOf(v) };
      }).sort(function (x, y) { return y.top - x.top; });
      var shown = series.slice(0, 5), rest = new Array(nb).fill(0);
      series.slice(5).forEach(function (s) { s.v.forEach(function (x, k) { rest[k] += x; }); });
      if (series.length > 5) shown.push({ p: { f: ['the rest'] }, v: rest });
      var total = new Array(nb).fill(0);
      shown.forEach(function (s) { s.v.forEach(function (x, k) { total[k] += x; }); });
      var tm = maxOf(total), SH = 140, colors = ['#d62728', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#bbbbbb'];
      var st2 = mk('svg', { id: 'stacked-chart', viewBox: '0 0 ' + W + ' ' + SH, width: '100%' }, tsec);
      var base = new Array(nb).fill(0), keyList = add(tsec, 'ul');
      keyList.id = 'stacked-key';
      shown.forEach(function (s, k) {
        var top = [], bottom = [];
        for (var b = 0; b < nb; b++) {
          var x0 = b * sw, x1 = Math.min(W, (b + 1) * sw), y0 = SH - SH * base[b] / tm, y1 = SH - SH * (base[b] + s.v[b]) / tm;
          top.push(x0.toFixed(1) + ',' + y1.toFixed(1), x1.toFixed(1) + ',' + y1.toFixed(1));
          bottom.unshift(x1.toFixed(1) + ',' + y0.toFixed(1), x0.toFixed(1) + ',' + y0.toFixed(1));
          base[b] += s.v[b];
        }
        mk('polygon', { points: top.concat(bottom).join(' '), fill: colors[k % colors.length] }, st2);
        var li = add(keyList, 'li');
        add(li, 'span', '\u25a0 ', undefined).style.color = colors[k % colors.length];
        var who = s.p.f[0] || '?';
        if (s.p.pid !== undefined) { var fa = add(li, 'a', who, 'fn'); fa.href = '#callers-head'; add(li, 'span', ' (pid ' + s.p.pid + ' ' + s.p.comm + ')'); }
        else add(li, 'span', who);
        add(li, 'span', ', up to ' + (byHeld ? bytes(s.top || maxOf(s.v)) : maxOf(s.v).toLocaleString('en') + ' faults'));
      });
      add(tsec, 'p', (byHeld ? 'Bytes malloc\'s blocks held at the end of each bucket' : 'Page faults in each bucket') +
          ', by the stacks that held the most' + (byHeld ? ' (libc\'s one-time allocations left out, as leaks leaves them out)' : '') +
          ', up to ' + (byHeld ? bytes(tm) : tm.toLocaleString('en')) + ' in all. Drag across either chart to select a window: every view below then counts that window alone.');
    }
    rangeOut = add(tsec, 'p');
    rangeOut.id = 'timeline-range';
    var clear = add(tsec, 'button', 'Whole recording');
    clear.id = 'window-clear';
    clear.onclick = function () { state.window = null; redraw(); };
    var boxes = [svg, document.getElementById('stacked-chart')].filter(Boolean);
    var sels = boxes.map(function (b) { return mk('rect', { y: 0, height: '100%', fill: 'rgba(0,0,0,0.15)', width: 0 }, b); });
    setSel = function () {
      var w = state.window;
      sels.forEach(function (r) {
        r.setAttribute('x', w ? w[0] * sw : 0);
        r.setAttribute('width', w ? (w[1] - w[0]) * sw : 0);
      });
    };
    boxes.forEach(function (box) {
      var from = null;
      var at = function (ev) {
        var b = box.getBoundingClientRect();
        return Math.min(W, Math.max(0, (ev.clientX - b.left) * W / b.width));
      };
      box.addEventListener('mousedown', function (ev) { from = at(ev); ev.preventDefault(); });
      box.addEventListener('mousemove', function (ev) {
        if (from === null) return;
        var x = at(ev);
        sels.forEach(function (r) { r.setAttribute('x', Math.min(from, x)); r.setAttribute('width', Math.abs(x - from)); });
      });
      box.addEventListener('mouseup', function (ev) {
        if (from === null) return;
        var x = at(ev), i = Math.floor(Math.min(from, x) / sw), j = Math.min(nb, Math.ceil(Math.max(from, x) / sw));
        from = null;
        if (i >= nb) i = nb - 1;
        if (j <= i) j = i + 1;
        state.window = i === 0 && j === nb ? null : [i, j];
        redraw();
      });
    });
  }

  /* Top-down and bottom-up trees, and the callers and callees of a
   * function clicked anywhere on the page, all of the window. */
  var treeSec = { down: document.getElementById('topdown'), up: document.getElementById('bottomup') };
  function treeOf(order, m, a, b) {
    var top = { kids: {}, w: 0, n: 0 };
    paths.forEach(function (p) {
      var w = weigh(p, m, a, b);
      if (!w) return;
      var node = top, fr = order === 'down' ? p.f.slice().reverse() : p.f;
      top.w += w;
      fr.forEach(function (name) {
        node = node.kids[name] || (node.kids[name] = { name: name, kids: {}, w: 0 });
        node.w += w;
      });
    });
    return top;
  }
  /* Draw a tree treeOf built, weighed by m, under root; its total. */
  function tree(root, top, m) {
    var total = top.w;
    function draw(parent, node, depth) {
      Object.keys(node.kids).map(function (k) { return node.kids[k]; })
        .sort(function (x, y) { return y.w - x.w; }).forEach(function (k) {
          var det = add(parent, 'details'), sm = add(det, 'summary');
          var val = add(sm, 'span', fmtBy(m, k.w) + ' (' + (total ? (100 * k.w / total).toFixed(1) : '0') + '%) ', 'w');
          val.setAttribute('data-value', k.w);
          var fn = add(sm, 'a', k.name, 'fn');
          fn.href = '#callers-head';
          if (depth < 1) det.open = true;
          var filled = false;
          det.ontoggle = function () { if (det.open && !filled) { filled = true; draw(det, k, depth + 1); } };
          if (det.open) { filled = true; draw(det, k, depth + 1); }
        });
    }
    draw(root, top, 0);
    return total;
  }
  /* A flame graph of the window, drawn from the same stacks as the trees:
   * the outermost callers at the bottom, each frame as wide as its share;
   * frames under half a pixel left out, as the graphs below leave them. */
  var NS = 'http://www.w3.org/2000/svg';
  function flame(sec, m, top) {
    var FW = 1200, FH = 16, depth = 0, rows = [];
    (function lay(node, x, dep) {
      Object.keys(node.kids).sort().forEach(function (k) {
        var c = node.kids[k], w = top.w ? FW * c.w / top.w : 0;
        if (w >= 0.5) {
          rows.push([x, dep, w, c]);
          if (dep + 1 > depth) depth = dep + 1;
          lay(c, x, dep + 1);
        }
        x += w;
      });
    })(top, 0, 0);
    var FHt = depth * FH + 2, svg = document.createElementNS(NS, 'svg');
    svg.id = 'wflame-svg';
    svg.setAttribute('viewBox', '0 0 ' + FW + ' ' + FHt);
    svg.setAttribute('width', '100%');
    svg.setAttribute('data-total', top.w);
    svg.style.fontSize = '11px';
    rows.forEach(function (r) {
      var g = document.createElementNS(NS, 'g'), c = r[3], y = FHt - (r[1] + 1) * FH, h = 0;
      for (var i = 0; i < c.name.length; i++) h = (h * 31 + c.name.charCodeAt(i)) & 0xffff;
      var t = document.createElementNS(NS, 'title'), rect = document.createElementNS(NS, 'rect');
      t.textContent = c.name + ' (' + fmtBy(m, c.w) + ', ' + (100 * c.w / top.w).toFixed(2) + '%)';
      rect.setAttribute('x', r[0].toFixed(2)); rect.setAttribute('y', y);
      rect.setAttribute('width', Math.max(r[2] - 0.5, 0.1).toFixed(2)); rect.setAttribute('height', FH - 1);
      rect.setAttribute('fill', 'hsl(' + (90 + h % 50) + ',55%,' + (50 + h % 20) + '%)');
      g.appendChild(t); g.appendChild(rect);
      var n = Math.floor((r[2] - 6) / 6.5);
      if (n >= 3) {
        var tx = document.createElementNS(NS, 'text');
        tx.setAttribute('x', (r[0] + 3).toFixed(2)); tx.setAttribute('y', y + FH - 4);
        tx.textContent = c.name.length <= n ? c.name : c.name.slice(0, n - 2) + '..';
        g.appendChild(tx);
      }
      g.setAttribute('data-name', c.name);
      g.style.cursor = 'pointer';
      g.addEventListener('click', function () { openCallers(c.name); });
      svg.appendChild(g);
    });
    sec.appendChild(svg);
    return top.w;
  }
  function controls(sec) {
    var p = add(sec, 'p'), s = add(p, 'select');
    s.className = 'metric';
    metricList.forEach(function (m) {
      var o = add(s, 'option', 'by ' + metrics[m].label);
      o.value = m;
    });
    s.value = state.metric;
    s.onchange = function () { state.metric = s.value; redraw(); };
    return p;
  }
  function callers(name) {
    var sec = document.getElementById('callers'), up = {}, down = {}, self = 0, all = 0, w = win(), m = state.metric;
    paths.forEach(function (p) {
      var seen = false, v = weigh(p, m, w[0], w[1]);
      if (!v) return;
      p.f.forEach(function (f, i) {
        if (f !== name) return;
        if (!seen) { all += v; seen = true; }
        if (i === 0) self += v;
        if (i + 1 < p.f.length) up[p.f[i + 1]] = (up[p.f[i + 1]] || 0) + v;
        if (i > 0) down[p.f[i - 1]] = (down[p.f[i - 1]] || 0) + v;
      });
    });
    sec.textContent = '';
    add(sec, 'p', name + ': ' + fmtBy(m, all) + ' in all, ' + fmtBy(m, self) + ' in it itself.', 'callers-of');
    [['Callers', up, 'callers-list'], ['Callees', down, 'callees-list']].forEach(function (c) {
      add(sec, 'h3', c[0]);
      var ul = add(sec, 'ul');
      ul.id = c[2];
      Object.keys(c[1]).sort(function (x, y) { return c[1][y] - c[1][x]; }).forEach(function (k) {
        var li = add(ul, 'li', fmtBy(m, c[1][k]) + ' ');
        var a = add(li, 'a', k, 'fn');
        a.href = '#callers-head';
      });
      if (!ul.firstChild) add(ul, 'li', '(none)');
    });
  }
  function openCallers(name) {
    state.callers = name;
    callers(state.callers);
    stateWrite();
    document.getElementById('callers-head').scrollIntoView();
  }
  document.addEventListener('click', function (ev) {
    var t = ev.target;
    if (t && t.classList && t.classList.contains('fn') && paths.length) {
      ev.preventDefault();
      openCallers(t.textContent);
    }
  });
  /* A frame clicked in a flame graph, which the graph tells by message (it
   * is a document of its own): under that graph, a link to the function's
   * callers and callees. Only the page's own graphs are heard, and the
   * name is only ever text. */
  window.addEventListener('message', function (ev) {
    var d = ev.data, objs = document.querySelectorAll('object[id]');
    if (!d || typeof d.memsightFrame !== 'string' || !paths.length) return;
    for (var i = 0; i < objs.length; i++) {
      if (objs[i].contentWindow !== ev.source) continue;
      var id = objs[i].id + '-fn', p = document.getElementById(id);
      if (!p) {
        p = document.createElement('p');
        p.id = id;
        objs[i].parentNode.insertBefore(p, objs[i].nextSibling);
      }
      p.textContent = 'Clicked in the graph: ';
      add(p, 'a', d.memsightFrame, 'fn').href = '#callers-head';
      add(p, 'span', ', its callers and callees.');
      return;
    }
  });
  var fillTable = null;
  function redraw() {
    var w = win(), m = state.metric;
    setSel();
    if (rangeOut && stl) {
      if (state.window) {
        var tot = {};
        metricList.forEach(function (k) { if (k !== 'peak') tot[k] = 0; });
        paths.forEach(function (p) { for (var k in tot) tot[k] += weigh(p, k, w[0], w[1]); });
        rangeOut.textContent = 'The window from +' + secs((stl.start_ns + w[0] * stl.bucket_ns) / 1e9) + ' to +' +
          secs((stl.start_ns + w[1] * stl.bucket_ns) / 1e9) + ': ' +
          Object.keys(tot).map(function (k) { return fmtBy(k, tot[k]) + (k === 'leaked' ? ' leaked' : k === 'allocated' ? ' allocated' : ''); }).join(', ') +
          '. The same from the command line: memsight leaks --time ' + timeArg(w[0], w[1]) + ' ' + (d.info ? d.info.trace : '');
        rangeOut.setAttribute('data-time', timeArg(w[0], w[1]));
      } else {
        rangeOut.textContent = 'The whole recording.';
        rangeOut.removeAttribute('data-time');
      }
    }
    /* Each tree built once: the top-down one is the flame graph's too. */
    var tops = {};
    if (paths.length && m) ['down', 'up'].forEach(function (o) { tops[o] = treeOf(o, m, w[0], w[1]); });
    ['down', 'up'].forEach(function (o) {
      var sec = treeSec[o];
      if (!sec || !tops[o]) return;
      sec.textContent = '';
      controls(sec);
      var lead = add(sec, 'p');
      var total = tree(sec, tops[o], m);
      lead.id = o === 'down' ? 'topdown-total' : 'bottomup-total';
      lead.setAttribute('data-value', total);
      lead.textContent = fmtBy(m, total) + ' ' + titleOf(m) + (o === 'down' ? ', from the outermost callers in:' : ', from the functions that asked out:');
    });
    var fsec = document.getElementById('wflame');
    if (fsec && tops.down) {
      fsec.textContent = '';
      var flead = add(fsec, 'p');
      var ftotal = flame(fsec, m, tops.down);
      flead.textContent = fmtBy(m, ftotal) + ' ' + titleOf(m) + ', by stack (the menus above the trees choose what it weighs). A click on a frame shows its callers and callees.';
    }
    if (state.callers !== null && paths.length) callers(state.callers);
    if (fillTable) fillTable();
    /* The sizes of the window's allocations; the flame graphs say what
     * they are of. */
    var mal = d.report && d.report.malloc;
    if (drawSizes && mal) {
      if (state.window && stl) {
        var by = {};
        stl.sizes.forEach(function (c) {
          if (c[0] < w[0] || c[0] >= w[1]) return;
          var k = c[1] === null ? 'larger' : c[1], e = by[k] || (by[k] = { up_to: c[1], allocations: 0, bytes: 0 });
          e.allocations += c[2];
          e.bytes += c[3];
        });
        drawSizes(Object.keys(by).map(function (k) { return by[k]; }).sort(function (a, b) {
          return (a.up_to === null) - (b.up_to === null) || a.up_to - b.up_to;
        }));
      } else {
        drawSizes(mal.sizes);
      }
    }
    var sn = document.getElementById('sizes-note');
    if (!sn && document.getElementById('sizes')) {
      sn = add(document.getElementById('sizes'), 'p');
      sn.id = 'sizes-note';
    }
    if (sn) sn.textContent = state.window ? 'The allocations made in the window. The flame graphs below are of the whole recording.' : '';
    stateWrite();
  }
  var f = d.functions;
  if (f && f.functions.length) {
    var w1 = function (v) { return f.weight === 'count' ? v.toLocaleString('en') : bytes(v); };
    f.functions.filter(function (x) { return x.self > 0; }).slice(0, 3).forEach(function (x, k) {
      row(k ? '' : 'Top functions', x.function + ': ' + w1(x.self) + ' self, ' + w1(x.total) + ' total (' + f.event +
          ', ' + f.weight + ')');
    });
  }
  /* The flat table by function: the functions command's, for the whole
   * recording; for a window, summed from its stacks. Sorted by a click on
   * a column's head. */
  var fsec = document.getElementById('functions');
  if (fsec && ((f && f.functions.length) || paths.length)) {
    var q = add(fsec, 'input');
    q.id = 'function-search';
    q.placeholder = 'search functions (press /)';
    var note = add(fsec, 'p');
    note.id = 'functions-note';
    var tb = add(fsec, 'table', undefined, 'leaks');
    tb.id = 'functions-table';
    var head = add(tb, 'tr'), cols = ['function', 'object', 'self', 'total'], body = add(tb, 'tbody'), rows = [], unitOf = 'bytes';
    var filter = function () {
      var s = q.value.toLowerCase();
      Array.prototype.forEach.call(body.rows, function (r) {
        r.style.display = r.cells[0].textContent.toLowerCase().indexOf(s) < 0 ? 'none' : '';
      });
    };
    q.oninput = filter;
    document.addEventListener('keydown', function (ev) {
      if (ev.key === '/' && document.activeElement !== q) { ev.preventDefault(); q.focus(); }
    });
    var show = function (list) {
      body.textContent = '';
      list.forEach(function (x) {
        var r = add(body, 'tr');
        cols.forEach(function (k) {
          if (k === 'function') { var a = add(add(r, 'td'), 'a', x[k], 'fn'); a.href = '#callers-head'; return; }
          var c = add(r, 'td', k === 'object' ? x[k] || '' : unitOf === 'bytes' ? bytes(x[k]) : x[k].toLocaleString('en'));
          if (k !== 'object') c.setAttribute('data-value', x[k]);
        });
      });
      filter();
    };
    cols.forEach(function (k) {
      var h = add(head, 'th', k);
      h.style.cursor = 'pointer';
      h.onclick = function () {
        var num = k === 'self' || k === 'total';
        show(rows.slice().sort(function (a, b) { return num ? b[k] - a[k] : String(a[k]).localeCompare(String(b[k])); }));
      };
    });
    fillTable = function () {
      var w = win(), m = state.metric;
      if (!state.window && f && f.functions.length) {
        rows = f.functions;
        unitOf = f.weight === 'count' ? 'count' : 'bytes';
        note.textContent = 'By ' + f.event + ', weighted by ' + f.weight + (f.estimate ? ' (estimates)' : '') + '; ' +
          f.functions_shown + ' of ' + f.functions_total + ' functions.';
      } else {
        var by = {};
        paths.forEach(function (p) {
          var v = weigh(p, m, w[0], w[1]), seen = {};
          if (!v) return;
          p.f.forEach(function (name, i) {
            var e = by[name] || (by[name] = { function: name, object: null, self: 0, total: 0 });
            if (i === 0) e.self += v;
            if (!seen[name]) { e.total += v; seen[name] = true; }
          });
        });
        rows = Object.keys(by).map(function (k) { return by[k]; }).sort(function (a, b) { return b.self - a.self || b.total - a.total; });
        unitOf = metrics[m].unit === 'bytes' ? 'bytes' : 'count';
        note.textContent = 'By ' + metrics[m].label + (state.window ? ' in the window' : '') + ', from the ' + paths.length +
          ' heaviest stacks; ' + rows.length + ' functions.';
      }
      show(rows);
    };
  }
  redraw();
})();

(function () {
  if (window.performance && performance.mark) performance.mark('memsight-start');
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
  /* Names for stacks shown together (innermost frame first, each): the
   * innermost frame, and where stacks of the same innermost frame part,
   * the frame that tells each apart. */
  function distinct(list) {
    return list.map(function (f) {
      var far = 0;
      list.forEach(function (o) {
        if (o === f || o[0] !== f[0]) return;
        var j = 1;
        while (j < f.length && j < o.length && f[j] === o[j]) j++;
        if (j < f.length && j > far) far = j;
      });
      return far ? (far > 1 ? ' \u2190 \u2026 \u2190 ' : ' \u2190 ') + f[far] : '';
    }).map(function (x, k, all) {
      /* Stacks no frame's name tells apart (unnamed frames at other
       * addresses): numbered. */
      var same = all.filter(function (y, j) { return y === x && list[j][0] === list[k][0]; }).length > 1;
      return same ? x + ' (stack ' + (k + 1) + ')' : x;
    });
  }
  function asked(frames) {
    var fr = frames.map(function (x) { return x.function || '[' + (x.object || 'unknown') + ']'; });
    while (fr.length > 1 && alloc.test(fr[0])) fr.shift();
    return fr;
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
  var m = d.report && d.report.malloc, drawSizes = null;
  /* Temporary allocations are known only where every call was recorded. */
  var tempKnown = !!m && m.processes.every(function (p) { return p.temporary !== null; });
  if (m) {
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
      ['size', 'allocations', 'bytes', 'temporary', ''].forEach(function (h) { add(hr, 'th', h); });
      list.forEach(function (c) {
        var r = add(st, 'tr');
        add(r, 'td', c.up_to === null ? 'larger' : 'up to ' + bytes(c.up_to));
        add(r, 'td', c.allocations.toLocaleString('en')).setAttribute('data-value', c.allocations);
        add(r, 'td', bytes(c.bytes)).setAttribute('data-value', c.bytes);
        if (c.temporary === null) add(r, 'td', 'not estimated', 'na');
        else add(r, 'td', c.temporary.toLocaleString('en')).setAttribute('data-value', c.temporary);
        var bar = add(add(r, 'td'), 'div', undefined, 'bar');
        bar.style.width = Math.max(1, Math.round(300 * c.allocations / most)) + 'px';
      });
    };
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


  /* The page's state, which its address keeps (a permalink): #window=A,B
   * (buckets of the stacks' timeline), metric=M (what the trees sort and
   * the flame graph weighs by), callers=NAME, focus=RE and ignore=RE. */
  var state = { window: null, metric: null, callers: null, focus: '', ignore: '' };
  var stl = d.report && d.report.stack_timeline;
  /* --focus and --ignore given to report: where the address says nothing. */
  if (stl && stl.focus) state.focus = stl.focus;
  if (stl && stl.ignore) state.ignore = stl.ignore;
  function stateRead() {
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var k = kv.split('=')[0], v = decodeURIComponent(kv.slice(k.length + 1));
      if (k === 'window' && /^[0-9]+,[0-9]+$/.test(v)) state.window = v.split(',').map(Number);
      else if (k === 'metric' || k === 'callers' || k === 'focus' || k === 'ignore') state[k] = v;
    });
  }
  function stateWrite() {
    var h = [];
    if (state.window) h.push('window=' + state.window.join(','));
    if (state.metric) h.push('metric=' + state.metric);
    if (state.callers !== null) h.push('callers=' + encodeURIComponent(state.callers));
    if (state.focus) h.push('focus=' + encodeURIComponent(state.focus));
    if (state.ignore) h.push('ignore=' + encodeURIComponent(state.ignore));
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
  var paths = [];
  if (stl) {
    var toPath = function (x, frames) {
      var fr = frames.slice();
      /* a block is its asker's: the allocation functions above it left out */
      while (x.made.length && fr.length > 1 && alloc.test(fr[0])) fr.shift();
      return { f: fr, all: frames, pid: x.pid, comm: x.comm, made: x.made, live: x.live, faults: x.faults, temp: x.temporary || [],
               peak: x.peak_bytes || 0 };
    };
    stl.stacks.forEach(function (x) {
      paths.push(toPath(x, x.f.map(function (i) { return stl.names[i]; })));
    });
    if (stl.other.stacks)
      paths.push(toPath(stl.other, ['(' + stl.other.stacks.toLocaleString('en') + ' other stacks)']));
  }
  var nb = stl ? Math.max(stl.buckets, 1) : 1;
  /* What the views weigh by, side by side: each a column of the trees,
   * its label, and what the whole recording's total and a window's are. */
  var metrics = {
    peak: { unit: 'bytes', label: 'peak', title: 'held at the heap\'s peak', inWindow: 'held at the heap\'s peak (the whole recording\'s)' },
    leaked: { unit: 'bytes', label: 'leaked', title: 'leaked (held at the end)', inWindow: 'made in the window and not freed in it' },
    allocated: { unit: 'bytes', label: 'allocated', title: 'allocated', inWindow: 'allocated in the window' },
    calls: { unit: 'allocations', label: 'allocations', title: 'made', inWindow: 'made in the window' },
    temporary: { unit: 'allocations', label: 'temporary', title: 'temporary (freed right after an allocation of the same stack and size)',
                 inWindow: 'temporary, made in the window' },
    faults: { unit: 'faults', label: 'faults', title: 'taken', inWindow: 'taken in the window' }
  };
  var metricOrder = ['peak', 'leaked', 'allocated', 'calls', 'temporary', 'faults'];
  function titleOf(m) { return state.window ? metrics[m].inWindow : metrics[m].title; }
  function zero() { return { peak: 0, leaked: 0, allocated: 0, calls: 0, temporary: 0, faults: 0 }; }
  /* What a path weighs by every metric in buckets [a, b). */
  function weighAll(p, a, b) {
    var v = zero();
    p.live.forEach(function (c) { if (c[0] >= a && c[0] < b && (c[1] === null || c[1] >= b)) v.leaked += c[2]; });
    p.made.forEach(function (c) { if (c[0] >= a && c[0] < b) { v.allocated += c[1]; v.calls += c[2]; } });
    p.temp.forEach(function (c) { if (c[0] >= a && c[0] < b) v.temporary += c[1]; });
    p.faults.forEach(function (c) { if (c[0] >= a && c[0] < b) v.faults += c[1]; });
    v.peak = p.peak;
    return v;
  }
  function weigh(p, m, a, b) { return weighAll(p, a, b)[m]; }
  var have = {};
  paths.forEach(function (p) {
    if (p.made.length) { have.allocated = have.calls = have.leaked = true; }
    if (p.made.length && tempKnown) have.temporary = true;
    if (p.peak) have.peak = true;
    if (p.faults.length) have.faults = true;
  });
  var metricList = metricOrder.filter(function (m) { return have[m]; });
  /* Leaked first where allocations were recorded: what a leak hunt sorts by. */
  var metricDefault = have.leaked ? 'leaked' : metricList[0] || null;
  if (!state.metric || metricList.indexOf(state.metric) < 0) state.metric = metricDefault;
  function fmtBy(m, v) {
    return metrics[m].unit === 'bytes' ? bytes(v) : v.toLocaleString('en') + ' ' + (metrics[m].unit === 'faults' ? 'faults' : 'allocations');
  }
  function fmtCell(m, v) { return metrics[m].unit === 'bytes' ? bytes(v) : v.toLocaleString('en'); }
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
  /* Focus and hide, as pprof's --focus and --ignore: the stacks with a
   * frame the one matches, less those with a frame the other matches. */
  function regex(s) { try { return s ? new RegExp(s) : null; } catch (e) { return undefined; } }
  function filtered() {
    var fo = regex(state.focus), ig = regex(state.ignore);
    return paths.filter(function (p) {
      return (!fo || p.all.some(function (f) { return fo.test(f); })) && (!ig || !p.all.some(function (f) { return ig.test(f); }));
    });
  }

  /* Nice steps for an axis: 1, 2 or 5 times a power of ten (of 1024 for
   * bytes), the first that gives at most n ticks up to top. */
  function axisStep(top, n, unitBytes) {
    var base = 1;
    if (unitBytes) while (top / base >= 1024 * 2 && base < Math.pow(1024, 4)) base *= 1024;
    var x = top / base / n, p = Math.pow(10, Math.floor(Math.log10(Math.max(x, 1e-9))));
    var step = [1, 2, 5, 10].map(function (k) { return k * p; }).filter(function (s) { return s >= x; })[0];
    return Math.max(step * base, unitBytes ? 1 : 1e-9);
  }
  function tickBytes(v) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (v >= 1024 && i < 4) { v /= 1024; i++; }
    return (Math.round(v * 100) / 100) + ' ' + u[i];
  }
  /* A time tick in the unit of the axis's end. */
  function tickTime(s, end) {
    if (end < 2e-3) return +(s * 1e6).toFixed(3) + ' \u00b5s';
    if (end < 2) return +(s * 1000).toFixed(3) + ' ms';
    return +s.toFixed(3) + ' s';
  }

  /* Over time: faults as bars (their scale on the right), the heap,
   * resident memory and brk growth as lines on one scale of bytes (on the
   * left), time below; what a point in time held under the pointer; and
   * below, what the heaviest stacks held; a drag selects a window. */
  var tl = d.report && d.report.timeline, tsec = document.getElementById('timeline');
  var W = 1000, H = 160, L = 78, R = 60, rangeOut = null, setSel = function () {};
  if (tl && tl.faults.length) {
    var n = tl.faults.length, bw = W / n, end = tl.start_s + n * tl.bucket_s;
    var outer = mk('svg', { id: 'timeline-axes', viewBox: '0 0 ' + (L + W + R) + ' ' + (H + 30), width: '100%' }, tsec);
    var svg = mk('svg', { id: 'timeline-chart', x: L, y: 6, width: W, height: H, viewBox: '0 0 ' + W + ' ' + H,
                          preserveAspectRatio: 'none' }, outer);
    mk('rect', { x: 0, y: 0, width: W, height: H, fill: '#fcfcfc' }, svg);
    var fm = maxOf(tl.faults), hasFaults = tl.faults.some(function (v) { return v > 0; });
    var fstep = axisStep(fm, 4, false), ftop = Math.ceil(fm / fstep) * fstep;
    tl.faults.forEach(function (v, i) {
      if (v) mk('rect', { x: i * bw, y: H - H * v / ftop, width: Math.max(bw - 0.5, 0.5), height: H * v / ftop, fill: '#8ab0dc' }, svg);
    });
    var grew = 0, grown = tl.brk_bytes.map(function (v) { return grew += v; });
    var lines = [];
    if (tl.heap_bytes && tl.heap_bytes.some(function (v) { return v > 0; }))
      lines.push({ v: tl.heap_bytes, color: '#c33', id: 'timeline-heap', name: 'malloc heap in use' });
    if (tl.rss_bytes) lines.push({ v: tl.rss_bytes, color: '#84b', id: 'timeline-rss', name: 'resident memory (rss_stat)' });
    if (grew) lines.push({ v: grown, color: '#393', id: 'timeline-brk', name: 'brk growth so far' });
    var ym = 1;
    lines.forEach(function (l) { ym = Math.max(ym, maxOf(l.v)); });
    var ystep = axisStep(ym, 4, true), ytop = Math.ceil(ym / ystep) * ystep;
    /* The axes' lines cross the chart, drawn over it: the pointer goes
     * through them to the chart, whose read-out and drag they would
     * otherwise take wherever a grid line lies. */
    var yaxis = mk('g', { id: 'timeline-yaxis', 'font-size': 11, 'text-anchor': 'end', 'pointer-events': 'none' }, outer);
    if (lines.length)
      for (var yv = 0; yv <= ytop + ystep / 2; yv += ystep) {
        var yy = 6 + H - H * yv / ytop;
        mk('line', { x1: L - 4, x2: L + W, y1: yy, y2: yy, stroke: '#e4e4e4' }, yaxis);
        mk('text', { x: L - 6, y: yy + 4, 'data-value': yv }, yaxis).textContent = tickBytes(yv);
      }
    if (hasFaults) {
      var faxis = mk('g', { id: 'timeline-faxis', 'font-size': 11, 'pointer-events': 'none' }, outer);
      for (var fv = 0; fv <= ftop + fstep / 2; fv += fstep)
        mk('text', { x: L + W + 6, y: 6 + H - H * fv / ftop + 4, 'data-value': fv, fill: '#4a78b0' }, faxis).textContent = fv.toLocaleString('en');
    }
    lines.forEach(function (l) {
      var pts = l.v.map(function (v, i) { return (i * bw + bw / 2).toFixed(1) + ',' + (H - H * v / ytop).toFixed(1); });
      mk('polyline', { id: l.id, points: pts.join(' '), fill: 'none', stroke: l.color, 'stroke-width': 2,
                       'vector-effect': 'non-scaling-stroke' }, svg);
    });
    /* Time ticks at round numbers, in the recording's seconds. */
    var xaxis = mk('g', { id: 'timeline-xaxis', 'font-size': 11, 'text-anchor': 'middle', 'pointer-events': 'none' }, outer);
    var tstep = axisStep(end - tl.start_s, 8, false);
    for (var tv = Math.ceil(tl.start_s / tstep) * tstep; tv <= end + 1e-12; tv += tstep) {
      var tx = L + W * (tv - tl.start_s) / (end - tl.start_s || 1);
      mk('line', { x1: tx, x2: tx, y1: 6 + H, y2: 6 + H + 4, stroke: '#888' }, xaxis);
      mk('text', { x: tx, y: H + 24, 'data-value': +tv.toFixed(9) }, xaxis).textContent = '+' + tickTime(tv, end);
    }
    var legend = add(tsec, 'p', undefined, 'legend');
    legend.id = 'timeline-legend';
    if (hasFaults) {
      add(legend, 'span', '\u25a0', 'key').style.color = '#8ab0dc';
      add(legend, 'span', ' page faults in each ' + secs(tl.bucket_s) + ' (right scale) ');
    }
    lines.forEach(function (l) {
      add(legend, 'span', '\u25ac', 'key').style.color = l.color;
      add(legend, 'span', ' ' + l.name + ', up to ' + bytes(maxOf(l.v)) + ' ');
    });
    /* Under the pointer: the bucket's time and each series' value there. */
    var cursor = mk('line', { x1: 0, x2: 0, y1: 0, y2: H, stroke: '#333', 'stroke-width': 1, 'vector-effect': 'non-scaling-stroke',
                              visibility: 'hidden' }, svg);
    var readout = add(tsec, 'p', '\u00a0', 'readout');
    readout.id = 'timeline-readout';
    svg.addEventListener('mousemove', function (ev) {
      var b = svg.getBoundingClientRect(), k = Math.min(n - 1, Math.max(0, Math.floor((ev.clientX - b.left) / b.width * n)));
      cursor.setAttribute('x1', k * bw + bw / 2);
      cursor.setAttribute('x2', k * bw + bw / 2);
      cursor.setAttribute('visibility', 'visible');
      var parts = ['+' + secs(tl.start_s + k * tl.bucket_s) + ' to +' + secs(tl.start_s + (k + 1) * tl.bucket_s)];
      if (hasFaults) parts.push(count(tl.faults[k], 'page fault'));
      lines.forEach(function (l) { parts.push(l.name + ' ' + bytes(l.v[k])); });
      readout.textContent = parts.join('; ');
      readout.setAttribute('data-bucket', k);
    });
    svg.addEventListener('mouseleave', function () { cursor.setAttribute('visibility', 'hidden'); });
    /* The stacks' buckets are the timeline's, or whole numbers of them. */
    var per = stl ? Math.max(1, Math.round(stl.bucket_ns / (tl.bucket_s * 1e9))) : 1, sw = bw * per;
    if (stl && paths.length) {
      /* What the heaviest stacks held at the end of each bucket, stacked;
       * the rest summed. Faults when nothing was allocated. */
      var byHeld = have.leaked, series = paths.map(function (p) {
        var v = new Array(nb).fill(0);
        if (byHeld) p.live.forEach(function (c) { for (var k = c[0]; k < (c[1] === null ? nb : c[1]); k++) v[k] += c[2]; });
        else p.faults.forEach(function (c) { v[c[0]] += c[1]; });
        return { p: p, v: v, top: Math.max.apply(null, v) };
      }).filter(function (x) { return x.top > 0; }).sort(function (x, y) { return y.top - x.top; });
      var shown = series.slice(0, 5), rest = new Array(nb).fill(0);
      series.slice(5).forEach(function (s) { s.v.forEach(function (x, k) { rest[k] += x; }); });
      if (series.length > 5) shown.push({ p: { f: ['the rest'] }, v: rest });
      var total = new Array(nb).fill(0);
      shown.forEach(function (s) { s.v.forEach(function (x, k) { total[k] += x; }); });
      var tm = maxOf(total), SH = 140, colors = ['#d62728', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#bbbbbb'];
      var sstep = axisStep(tm, 3, byHeld), stop = Math.ceil(tm / sstep) * sstep;
      var souter = mk('svg', { id: 'stacked-axes', viewBox: '0 0 ' + (L + W + R) + ' ' + (SH + 12), width: '100%' }, tsec);
      var saxis = mk('g', { 'font-size': 11, 'text-anchor': 'end', 'pointer-events': 'none' }, souter);
      for (var sv = 0; sv <= stop + sstep / 2; sv += sstep) {
        var sy = 6 + SH - SH * sv / stop;
        mk('line', { x1: L - 4, x2: L + W, y1: sy, y2: sy, stroke: '#e4e4e4' }, saxis);
        mk('text', { x: L - 6, y: sy + 4, 'data-value': sv }, saxis).textContent = byHeld ? tickBytes(sv) : sv.toLocaleString('en');
      }
      var st2 = mk('svg', { id: 'stacked-chart', x: L, y: 6, width: W, height: SH, viewBox: '0 0 ' + W + ' ' + SH,
                            preserveAspectRatio: 'none' }, souter);
      /* A stack's name in the key: its innermost frame, and where stacks
       * of the same innermost frame part, the frame that tells it apart. */
      var apart = distinct(shown.map(function (s) { return s.p.f; }));
      var base = new Array(nb).fill(0), keyList = add(tsec, 'ul');
      keyList.id = 'stacked-key';
      shown.forEach(function (s, k) {
        var top = [], bottom = [];
        for (var b = 0; b < nb; b++) {
          var x0 = b * sw, x1 = Math.min(W, (b + 1) * sw), y0 = SH - SH * base[b] / stop, y1 = SH - SH * (base[b] + s.v[b]) / stop;
          top.push(x0.toFixed(1) + ',' + y1.toFixed(1), x1.toFixed(1) + ',' + y1.toFixed(1));
          bottom.unshift(x1.toFixed(1) + ',' + y0.toFixed(1), x0.toFixed(1) + ',' + y0.toFixed(1));
          base[b] += s.v[b];
        }
        mk('polygon', { points: top.concat(bottom).join(' '), fill: colors[k % colors.length] }, st2);
        var li = add(keyList, 'li');
        add(li, 'span', '\u25a0 ', undefined).style.color = colors[k % colors.length];
        if (s.p.pid !== undefined) {
          var fa = add(li, 'a', s.p.f[0] || '?', 'fn');
          fa.href = '#callers-head';
          add(li, 'span', apart[k] + ' (pid ' + s.p.pid + ' ' + s.p.comm + ')');
        } else add(li, 'span', s.p.f[0]);
        li.setAttribute('data-label', (s.p.f[0] || '?') + apart[k]);
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

  /* Focus and hide: patterns (JavaScript regular expressions) matched
   * against each frame's function. */
  var fsecF = document.getElementById('filters'), focusNote = null;
  if (fsecF && paths.length) {
    var fp = add(fsecF, 'p');
    [['focus', 'Focus on stacks through'], ['ignore', 'Hide stacks through']].forEach(function (x) {
      add(fp, 'label', x[1] + ' ');
      var inp = add(fp, 'input');
      inp.id = x[0] + '-input';
      inp.placeholder = 'a function name pattern';
      inp.defaultValue = state[x[0]];
      inp.onchange = function () { state[x[0]] = inp.value; redraw(); };
      add(fp, 'span', ' ');
    });
    focusNote = add(fsecF, 'p');
    focusNote.id = 'filter-note';
  }

  /* A tree of what the stacks weigh: list holds { p: path, v: its
   * weights }, frames(p) a path's frames from the root down (null: not in
   * this tree). Each node sums its stacks' weights. */
  function treeBuild(list, frames) {
    var top = { id: '', name: '', kids: {}, v: zero(), parent: null };
    list.forEach(function (e) {
      var fr = frames(e.p), node = top;
      if (!fr) return;
      for (var k in e.v) top.v[k] += e.v[k];
      fr.forEach(function (name) {
        var kid = node.kids[name];
        if (!kid) kid = node.kids[name] = { id: node.id + '\u001f' + name, name: name, kids: {}, v: zero(), parent: node };
        for (var k in e.v) kid.v[k] += e.v[k];
        node = kid;
      });
    });
    return top;
  }
  function kidsOf(node, m) {
    return Object.keys(node.kids).map(function (k) { return node.kids[k]; })
      .filter(function (k) { return metricList.some(function (x) { return k.v[x]; }); })
      .sort(function (x, y) { return y.v[m] - x.v[m] || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0); });
  }
  /* What each tree has open, by node id, kept across redraws. */
  var opened = {};
  /* Draw the tree top under sec as a table (id): a row a node, indented
   * by its depth with a guide line a level, the metrics side by side, each
   * with its share of the column's total. The heaviest path by the
   * sorting metric is opened down to its end. Keys: up and down move,
   * right opens or goes to the first child, left closes or goes to the
   * parent, * opens the whole subtree, Enter shows the function's
   * callers and callees. */
  function treeView(sec, id, top) {
    var m = state.metric, open = opened[id] || (opened[id] = {});
    /* Sorted, and the heaviest path opened, by the page's metric, or
     * where the tree holds none of it (a function that leaked nothing),
     * by the first it has. */
    m = top.v[m] ? m : metricList.filter(function (x) { return top.v[x]; })[0] || m;
    for (var node = top, kids; (kids = kidsOf(node, m)).length && kids[0].v[m]; node = kids[0]) open[node.id] = true;
    var tb = add(sec, 'table', undefined, 'tree');
    tb.id = id;
    tb.setAttribute('role', 'treegrid');
    var head = add(add(tb, 'thead'), 'tr'), totals = add(tb.tHead, 'tr', undefined, 'totals');
    add(head, 'th', 'function');
    add(totals, 'td', 'all', 'fncell');
    metricList.forEach(function (k) {
      var h = add(head, 'th', metrics[k].label + (k === m ? ' \u25be' : ''), k === m ? 'sorted' : undefined);
      h.setAttribute('data-metric', k);
      h.title = 'sort by ' + metrics[k].label;
      h.onclick = function () { state.metric = k; redraw(); };
      add(totals, 'td', fmtCell(k, top.v[k])).setAttribute('data-value', top.v[k]);
    });
    var body = add(tb, 'tbody'), rowNode = [];
    function render(focusId) {
      body.textContent = '';
      rowNode = [];
      (function walk(node, depth) {
        kidsOf(node, m).forEach(function (k) {
          var has = kidsOf(k, m).length > 0, r = add(body, 'tr');
          r.setAttribute('role', 'row');
          r.setAttribute('aria-level', depth + 1);
          r.setAttribute('data-depth', depth);
          r.tabIndex = -1;
          if (has) r.setAttribute('aria-expanded', open[k.id] ? 'true' : 'false');
          var c = add(r, 'td', undefined, 'fncell'), g = add(c, 'span', undefined, 'guide');
          g.style.width = (depth * 16) + 'px';
          add(c, 'span', has ? (open[k.id] ? '\u25be' : '\u25b8') : '\u00a0', 'tog');
          add(c, 'a', k.name, 'fn').href = '#callers-head';
          c.title = k.name;
          metricList.forEach(function (x) {
            var cell = add(r, 'td', fmtCell(x, k.v[x]));
            cell.setAttribute('data-value', k.v[x]);
            if (top.v[x] && k.v[x]) add(cell, 'span', ' ' + (100 * k.v[x] / top.v[x]).toFixed(1) + '%', 'pct');
          });
          rowNode.push(k);
          if (k.id === focusId) r.tabIndex = 0;
          if (has && open[k.id]) walk(k, depth + 1);
        });
      })(top, 0);
      if (!body.querySelector('tr[tabindex="0"]') && body.rows.length) body.rows[0].tabIndex = 0;
    }
    function expandAll(node) {
      var n = 0;
      (function walk(x) { if (n++ > 5000) return; open[x.id] = true; for (var k in x.kids) walk(x.kids[k]); })(node);
    }
    function focusOn(id) {
      for (var i = 0; i < rowNode.length; i++)
        if (rowNode[i].id === id) { body.rows[i].tabIndex = 0; body.rows[i].focus(); return; }
    }
    body.addEventListener('click', function (ev) {
      var r = ev.target.closest('tr'), i = r ? Array.prototype.indexOf.call(body.rows, r) : -1;
      if (i < 0 || !ev.target.classList.contains('tog')) return;
      var k = rowNode[i];
      if (ev.shiftKey) expandAll(k); else open[k.id] = !open[k.id];
      render(k.id);
      focusOn(k.id);
    });
    body.addEventListener('keydown', function (ev) {
      var r = ev.target.closest('tr'), i = r ? Array.prototype.indexOf.call(body.rows, r) : -1;
      if (i < 0) return;
      var k = rowNode[i], has = kidsOf(k, m).length > 0, to = null;
      if (ev.key === 'ArrowDown') to = rowNode[i + 1];
      else if (ev.key === 'ArrowUp') to = rowNode[i - 1];
      else if (ev.key === 'ArrowRight') { if (has && !open[k.id]) { open[k.id] = true; render(k.id); to = k; } else if (has) to = rowNode[i + 1]; }
      else if (ev.key === 'ArrowLeft') { if (has && open[k.id]) { open[k.id] = false; render(k.id); to = k; } else if (k.parent !== top) to = k.parent; }
      else if (ev.key === '*') { expandAll(k); render(k.id); to = k; }
      else if (ev.key === 'Enter') { openCallers(k.name); }
      else return;
      ev.preventDefault();
      if (to) focusOn(to.id);
    });
    render(null);
    return tb;
  }

  /* A flame graph of the window, drawn from the same stacks as the trees:
   * the outermost callers at the bottom, each frame as wide as its share;
   * frames under half a pixel left out, as the graphs below leave them. */
  var NS = 'http://www.w3.org/2000/svg';
  function flame(sec, m, top) {
    var FW = 1200, FH = 16, depth = 0, rows = [];
    (function lay(node, x, dep) {
      Object.keys(node.kids).sort().forEach(function (k) {
        var c = node.kids[k], w = top.v[m] ? FW * c.v[m] / top.v[m] : 0;
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
    svg.setAttribute('data-total', top.v[m]);
    svg.style.fontSize = '11px';
    rows.forEach(function (r) {
      var g = document.createElementNS(NS, 'g'), c = r[3], y = FHt - (r[1] + 1) * FH, h = 0;
      for (var i = 0; i < c.name.length; i++) h = (h * 31 + c.name.charCodeAt(i)) & 0xffff;
      var t = document.createElementNS(NS, 'title'), rect = document.createElementNS(NS, 'rect');
      t.textContent = c.name + ' (' + fmtBy(m, c.v[m]) + ', ' + (100 * c.v[m] / top.v[m]).toFixed(2) + '%)';
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
    return top.v[m];
  }
  function controls(sec) {
    var p = add(sec, 'p'), s = add(p, 'select');
    s.className = 'metric';
    metricList.forEach(function (m) {
      var o = add(s, 'option', 'sort by ' + metrics[m].label);
      o.value = m;
    });
    s.value = state.metric;
    s.onchange = function () { state.metric = s.value; redraw(); };
    add(p, 'span', ' Arrow keys move, open and close; * opens a whole subtree (or shift-click its \u25b8); a click on a function shows its callers and callees.', 'hint');
    return p;
  }
  /* The butterfly of a function: the tree of its callers, out to the
   * outermost, and the tree of its callees, in to where the memory was
   * asked for, both of the window and the filters. A recursive function
   * counts once per stack: its callers from its innermost call, its
   * callees from its outermost. */
  function callers(name, list) {
    var sec = document.getElementById('callers'), m = state.metric, all = 0, self = 0;
    var up = treeBuild(list, function (p) {
      var i = p.f.indexOf(name);
      return i < 0 ? null : p.f.slice(i);
    });
    var down = treeBuild(list, function (p) {
      var i = p.f.lastIndexOf(name);
      return i < 0 ? null : p.f.slice(0, i + 1).reverse();
    });
    list.forEach(function (e) { if (e.p.f[0] === name) self += e.v[m]; });
    all = up.v[m];
    sec.textContent = '';
    add(sec, 'p', name + ': ' + fmtBy(m, all) + ' in all, ' + fmtBy(m, self) + ' in it itself.', 'callers-of');
    add(sec, 'h3', 'Callers (out to the outermost)');
    treeView(sec, 'callers-tree', up);
    add(sec, 'h3', 'Callees (in to where memory was asked for)');
    treeView(sec, 'callees-tree', down);
  }
  var current = [];
  function openCallers(name) {
    if (state.callers !== name) { delete opened['callers-tree']; delete opened['callees-tree']; }
    state.callers = name;
    callers(state.callers, current);
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

  /* The summary's story: what happened, what it cost at its worst, who
   * asked most, and what was left. */
  var e = d.errors;
  if (e && e.errors.length) {
    var kinds = {};
    e.errors.forEach(function (x) { kinds[x.kind] = (kinds[x.kind] || 0) + 1; });
    row('Memory errors', Object.keys(kinds).map(function (k) { return kinds[k] + ' ' + k; }).join(', '), 'sum-errors');
  }
  /* A stack in the summary: where it asked, a link to its callers. */
  function who(c, name, what) {
    var a = add(c, 'a', name, 'fn');
    a.href = '#callers-head';
    if (what) add(c, 'span', what);
  }
  function pf(x) { return x.p.f; }
  /* Rows of stacks, each named apart from the others. */
  function stackRows(key, id, list, frames, text, value) {
    var apart = distinct(list.map(frames));
    list.forEach(function (x, k) {
      var c = row(k ? '' : key, text(x), k ? undefined : id), f = frames(x);
      who(c, f[0] || '?', apart[k] + ' (pid ' + x.pid + ' ' + x.comm + ')');
      if (value) c.setAttribute('data-bytes', value(x));
    });
  }
  function tops(m, n) {
    return paths.filter(function (p) { return p.pid !== undefined; })
      .map(function (p) { return { p: p, pid: p.pid, comm: p.comm, v: weighAll(p, 0, nb)[m] }; })
      .filter(function (x) { return x.v > 0; }).sort(function (a, b) { return b.v - a.v; }).slice(0, n);
  }
  if (m && m.peak && m.peak.bytes) {
    row('Peak heap', bytes(m.peak.bytes) + ' at +' + secs(m.peak.time_s || 0), 'sum-peak');
    stackRows('At the peak', 'sum-peak-top', (m.peak.stacks || []).slice(0, 3), function (s) { return asked(s.frames); },
              function (s) { return bytes(s.bytes) + ' from '; }, function (s) { return s.bytes; });
  }
  if (m) {
    stackRows('Most allocations', 'sum-most-calls', tops('calls', 3), pf,
              function (x) { return count(x.v, 'allocation') + ' (' + bytes(weighAll(x.p, 0, nb).allocated) + ') from '; });
    var calls = 0, temp = 0;
    m.processes.forEach(function (p) { calls += p.calls; temp += p.temporary || 0; });
    row('Temporary', !tempKnown ? 'not estimated from a sampled recording' :
        count(temp, 'allocation') + ' of ' + calls.toLocaleString('en') +
        ' freed right after an allocation of the same stack and size (as heaptrack counts them)',
        'sum-temporary');
    if (tempKnown)
      stackRows('Most temporary', 'sum-most-temporary', tops('temporary', 3), pf,
                function (x) { return count(x.v, 'allocation') + ' from '; });
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
    var la = distinct(l.stacks.slice(0, 3).map(function (s) { return asked(s.frames); }));
    l.stacks.slice(0, 3).forEach(function (s, k) {
      row(k ? '' : 'Most leaked', bytes(s.bytes) + ' in ' + count(s.allocations, 'allocation') + ' from ' + site(s.frames) + la[k] +
          ' (pid ' + s.pid + ' ' + s.comm + ')' + (s.kind && s.kind !== 'unknown' ? ', ' + s.kind.replace('_', ' ') : ''));
    });
  }
  /* A trace of the kernel's view: faults by kind, what they touched,
   * how the heap and the mappings grew. */
  var rf = d.report && d.report.faults;
  if (rf) {
    var nf = 0;
    rf.processes.forEach(function (p) { nf += p.faults; });
    var kt = rf.kinds ? Object.keys(rf.kinds).filter(function (k) { return rf.kinds[k]; })
      .map(function (k) { return rf.kinds[k].toLocaleString('en') + ' ' + k; }).join(', ') : '';
    var fc = row('Page faults', count(nf, 'page fault') + (rf.estimate ? ' (estimated)' : '') + (kt ? ': ' + kt : '') +
        '; about ' + bytes(nf * 4096) + ' of memory first touched (a 4 KiB page a fault)', 'sum-faults');
    fc.setAttribute('data-value', nf);
    stackRows('Most faults', 'sum-most-faults', tops('faults', 3), pf, function (x) { return count(x.v, 'fault') + ' from '; });
  }
  var rb = d.report && d.report.brk;
  if (rb) {
    var gb = 0, sb = 0;
    rb.processes.forEach(function (p) { gb += p.growth_bytes; sb += p.shrink_bytes; });
    row('Heap growth (brk)', bytes(gb) + ' grown, ' + bytes(sb) + ' given back' + (rb.estimate ? ' (estimated)' : ''), 'sum-brk')
      .setAttribute('data-value', gb);
  }
  var rm = d.report && d.report.mmap;
  if (rm) {
    var mb = 0, ub = 0;
    rm.processes.forEach(function (p) { mb += p.mapped_bytes; ub += p.unmapped_bytes; });
    row('Mapped (mmap)', bytes(mb) + ' mapped, ' + bytes(ub) + ' unmapped' + (rm.estimate ? ' (estimated)' : ''), 'sum-mmap');
  }
  if (drawSizes) drawSizes(m.sizes);

  var fillTable = null, lastFocus = null;
  function redraw() {
    var w = win(), m = state.metric;
    setSel();
    var fo = regex(state.focus), ig = regex(state.ignore), list = filtered();
    if (focusNote)
      focusNote.textContent = fo === undefined || ig === undefined ?
        'Not a regular expression: ' + (fo === undefined ? state.focus : state.ignore) + '. Nothing is filtered.' :
        state.focus || state.ignore ? list.length + ' of ' + paths.length + ' stacks kept by the filters: every view below counts them alone.' : '';
    if (lastFocus !== state.focus + '\u001f' + state.ignore) { opened = {}; lastFocus = state.focus + '\u001f' + state.ignore; }
    current = list.map(function (p) { return { p: p, v: weighAll(p, w[0], w[1]) }; })
      .filter(function (e) { return metricList.some(function (x) { return e.v[x]; }); });
    if (rangeOut && stl) {
      if (state.window) {
        var tot = {};
        metricList.forEach(function (k) { if (k !== 'peak') tot[k] = 0; });
        current.forEach(function (e) { for (var k in tot) tot[k] += e.v[k]; });
        rangeOut.textContent = 'The window from +' + secs((stl.start_ns + w[0] * stl.bucket_ns) / 1e9) + ' to +' +
          secs((stl.start_ns + w[1] * stl.bucket_ns) / 1e9) + ': ' +
          Object.keys(tot).map(function (k) { return fmtBy(k, tot[k]) + (k === 'leaked' ? ' leaked' : k === 'allocated' ? ' allocated' : k === 'temporary' ? ' temporary' : ''); }).join(', ') +
          '. The same from the command line: memsight leaks --time ' + timeArg(w[0], w[1]) + ' ' + (d.info ? d.info.trace : '');
        rangeOut.setAttribute('data-time', timeArg(w[0], w[1]));
      } else {
        rangeOut.textContent = 'The whole recording.';
        rangeOut.removeAttribute('data-time');
      }
    }
    /* Each tree built once: the top-down one is the flame graph's too. */
    var trees = {};
    if (paths.length && m) {
      trees.down = treeBuild(current, function (p) { return p.f.slice().reverse(); });
      trees.up = treeBuild(current, function (p) { return p.f; });
    }
    ['down', 'up'].forEach(function (o) {
      var sec = treeSec[o];
      if (!sec || !trees[o]) return;
      sec.textContent = '';
      controls(sec);
      var lead = add(sec, 'p'), total = trees[o].v[m];
      lead.id = o === 'down' ? 'topdown-total' : 'bottomup-total';
      lead.setAttribute('data-value', total);
      lead.textContent = fmtBy(m, total) + ' ' + titleOf(m) + (o === 'down' ? ', from the outermost callers in:' : ', from the functions that asked out:');
      treeView(sec, o === 'down' ? 'topdown-tree' : 'bottomup-tree', trees[o]);
    });
    var fsec = document.getElementById('wflame');
    if (fsec && trees.down) {
      fsec.textContent = '';
      var flead = add(fsec, 'p');
      var ftotal = flame(fsec, m, trees.down);
      flead.textContent = fmtBy(m, ftotal) + ' ' + titleOf(m) + ', by stack (the trees\' sorting chooses what it weighs). A click on a frame shows its callers and callees.';
    }
    if (state.callers !== null && paths.length) callers(state.callers, current);
    if (fillTable) fillTable();
    /* The sizes of the window's allocations; the flame graphs say what
     * they are of. */
    var mal = d.report && d.report.malloc;
    if (drawSizes && mal) {
      if (state.window && stl) {
        var by = {};
        stl.sizes.forEach(function (c) {
          if (c[0] < w[0] || c[0] >= w[1]) return;
          var k = c[1] === null ? 'larger' : c[1], e = by[k] || (by[k] = { up_to: c[1], allocations: 0, bytes: 0, temporary: 0 });
          e.allocations += c[2];
          e.bytes += c[3];
          e.temporary = c[4] === null || e.temporary === null ? null : e.temporary + c[4];
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
  var treeSec = { down: document.getElementById('topdown'), up: document.getElementById('bottomup') };
  var f = d.functions;
  if (f && f.functions.length) {
    var w1 = function (v) { return f.weight === 'count' ? v.toLocaleString('en') : bytes(v); };
    f.functions.filter(function (x) { return x.self > 0; }).slice(0, 3).forEach(function (x, k) {
      row(k ? '' : 'Top functions', x.function + ': ' + w1(x.self) + ' self, ' + w1(x.total) + ' total (' + f.event +
          ', ' + f.weight + ')');
    });
  }
  /* The flat table by function, the trees' columns side by side, each
   * as self (its stacks that end in it) and total (those it is anywhere
   * in): for the whole recording the analyzer's sums over every stack, for
   * a window or a filter the heaviest stacks'. Sorted by a click on a
   * column's head; / searches it. */
  var fsec = document.getElementById('functions');
  if (fsec && paths.length && metricList.length) {
    var q = add(fsec, 'input');
    q.id = 'function-search';
    q.placeholder = 'search functions (press /)';
    var note = add(fsec, 'p');
    note.id = 'functions-note';
    var tb = add(fsec, 'table', undefined, 'leaks');
    tb.id = 'functions-table';
    var thead = add(tb, 'thead'), h1 = add(thead, 'tr'), h2 = add(thead, 'tr'), body = add(tb, 'tbody'), rows = [];
    var sortBy = null;
    add(h1, 'th', 'function').rowSpan = 2;
    metricList.forEach(function (m) {
      add(h1, 'th', metrics[m].label).colSpan = 2;
      ['self', 'total'].forEach(function (k) {
        var h = add(h2, 'th', k);
        h.style.cursor = 'pointer';
        h.setAttribute('data-col', m + '-' + k);
        h.onclick = function () { sortBy = [m, k]; show(); };
      });
    });
    var filter = function () {
      var s = q.value.toLowerCase();
      Array.prototype.forEach.call(body.rows, function (r) {
        r.style.display = r.cells[0].textContent.toLowerCase().indexOf(s) < 0 ? 'none' : '';
      });
    };
    q.oninput = filter;
    document.addEventListener('keydown', function (ev) {
      if (ev.key === '/' && document.activeElement !== q && !(ev.target.closest && ev.target.closest('table.tree'))) {
        ev.preventDefault();
        q.focus();
      }
    });
    var show = function () {
      var by = sortBy || [state.metric, 'self'], other = by[1] === 'self' ? 'total' : 'self';
      rows.sort(function (a, b) {
        return b[by[1]][by[0]] - a[by[1]][by[0]] || b[other][by[0]] - a[other][by[0]] || (a.function < b.function ? -1 : 1);
      });
      body.textContent = '';
      rows.slice(0, 200).forEach(function (x) {
        var r = add(body, 'tr');
        var a = add(add(r, 'td'), 'a', x.function, 'fn');
        a.href = '#callers-head';
        metricList.forEach(function (m) {
          ['self', 'total'].forEach(function (k) {
            var c = add(r, 'td', fmtCell(m, x[k][m]));
            c.setAttribute('data-value', x[k][m]);
            c.setAttribute('data-col', m + '-' + k);
          });
        });
      });
      filter();
    };
    fillTable = function () {
      var w = win(), fn = stl && stl.functions;
      rows = [];
      if (!state.window && !state.focus && !state.ignore && fn) {
        fn.forEach(function (r) {
          var x = { function: stl.names[r[0]], self: {}, total: {} };
          metricOrder.forEach(function (m, c) { x.self[m] = r[1 + c]; x.total[m] = r[1 + metricOrder.length + c]; });
          rows.push(x);
        });
        note.textContent = 'The whole recording, every stack: the ' + Math.min(fn.length, 200) + ' heaviest of ' +
          stl.functions_total.toLocaleString('en') + ' functions.';
      } else {
        var by = {};
        current.forEach(function (e) {
          var seen = {};
          e.p.f.forEach(function (name, i) {
            var x = by[name] || (by[name] = { function: name, self: zero(), total: zero() });
            metricList.forEach(function (m) {
              if (i === 0) x.self[m] += e.v[m];
              if (!seen[name]) x.total[m] += e.v[m];
            });
            seen[name] = true;
          });
        });
        rows = Object.keys(by).map(function (k) { return by[k]; });
        note.textContent = (state.window ? 'The window' : 'The whole recording') + ', from the ' + current.length +
          ' heaviest stacks' + (state.focus || state.ignore ? ' the filters keep' : '') + ': ' + rows.length + ' functions.';
      }
      show();
    };
  }
  redraw();
  /* The graphs further down, each a document of its own, loaded as they
   * come near the window: a page of many large ones answers at once. */
  function graphsLoad() {
    var objs = Array.prototype.slice.call(document.querySelectorAll('object[data-src]'));
    var load = function (o) { if (!o.getAttribute('data')) o.setAttribute('data', o.getAttribute('data-src')); };
    if (!window.IntersectionObserver) { objs.forEach(load); return; }
    var io = new IntersectionObserver(function (es) {
      es.forEach(function (e) { if (e.isIntersecting) { load(e.target); io.unobserve(e.target); } });
    }, { rootMargin: '800px 0px' });
    objs.forEach(function (o) { io.observe(o); });
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', graphsLoad); else graphsLoad();
  /* When the views were drawn, for a browser's timeline (and its tests). */
  if (window.performance && performance.mark) performance.mark('memsight-drawn');
})();

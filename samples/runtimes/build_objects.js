// samples/runtimes/build_objects.js: a Node service's growth in miniature.
// buildObjects() keeps objects in a module-level array; V8 compiles it, and
// the heap's page faults come from its compiled code.
//
// Usage: node --perf-basic-prof build_objects.js [ROUNDS]
//
// Prints the truth: the objects kept and the function that kept them.
const cache = [];

function buildObjects(n) {
  for (let i = 0; i < n; i++)
    cache.push({ id: i, name: 'item' + i, tags: [i, i + 1, i + 2] });
}

const rounds = Number(process.argv[2] || 40);
for (let r = 0; r < rounds; r++)
  buildObjects(10000);
console.log(`build_objects: ${cache.length} objects from buildObjects`);

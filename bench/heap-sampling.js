/**
 * Preloaded into a spawned server (`BENCH_NODE_FLAGS="-r ./bench/heap-sampling.js" BENCH_CASES=create npm run
 * bench`): samples every allocation of the process, kept or collected since (V8's sampling heap profiler with
 * includeObjectsCollectedByMinorGC/MajorGC), and writes `<pid>.heapprofile` to BENCH_HEAP_DIR (default
 * .tmp/bench-heap) when the bench stops it. `node bench/heap-summary.js <file> <requests>` says where it
 * allocated, per request. Plain JavaScript: it loads before any transpiler.
 */
const fs = require('node:fs');
const path = require('node:path');
const inspector = require('node:inspector');

const dir = process.env.BENCH_HEAP_DIR || path.join(process.cwd(), '.tmp', 'bench-heap');
const session = new inspector.Session();
session.connect();
session.post('HeapProfiler.enable');
session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
process.prependListener('SIGTERM', () => {
  session.post('HeapProfiler.stopSampling', (err, r) => {
    if (err) return console.error(`heap sampling: ${err.message}`);
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${process.pid}.heapprofile`);
    fs.writeFileSync(file, JSON.stringify(r.profile));
    console.error(`heap sampling: wrote ${file}`);
  });
});

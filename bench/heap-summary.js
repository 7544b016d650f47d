/**
 * `node bench/heap-summary.js <file.heapprofile> <requests> [top]`: where a process sampled by
 * bench/heap-sampling.js allocated, in KB per request (the profile's whole run divided by `requests`, so
 * start-up counts too): by package or source file, and by function (self and, for src/, inclusive).
 */
const fs = require('node:fs');

const [file, requests, top = '25'] = process.argv.slice(2);
if (!file || !Number(requests)) throw new Error('usage: node bench/heap-summary.js <file.heapprofile> <requests> [top]');
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));

function where(url, fn) {
  if (!url) return fn || '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  const src = url.indexOf('/src/');
  return src >= 0 ? url.slice(src + 1) : url;
}

const byPackage = new Map();
const byFunction = new Map();
const bySrcInclusive = new Map();
const add = (m, k, v) => m.set(k, (m.get(k) || 0) + v);
(function walk(node, stack) {
  const { functionName, url, lineNumber } = node.callFrame;
  const key = `${functionName || '(anonymous)'} ${where(url, functionName)}:${lineNumber + 1}`;
  add(byPackage, where(url, functionName), node.selfSize);
  add(byFunction, key, node.selfSize);
  const onStack = key.includes(' src/') && !stack.includes(key) ? [...stack, key] : stack;
  for (const k of onStack) add(bySrcInclusive, k, node.selfSize);
  for (const child of node.children) walk(child, onStack);
})(profile.head, []);

const kb = (bytes) => (bytes / 1024 / Number(requests)).toFixed(2).padStart(8);
const total = [...byPackage.values()].reduce((a, b) => a + b, 0);
console.log(`${file}: ${kb(total)} KB allocated per request`);
for (const [title, m] of [['by package / source file', byPackage], ['by function (self)', byFunction], ['src/ functions (inclusive)', bySrcInclusive]]) {
  console.log(title);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) console.log(`${kb(v)}  ${k}`);
}

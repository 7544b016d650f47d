import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A text summary of the V8 CPU profiles (--cpu-prof) a spawned service wrote: where its busy time went, by
 * package or source file (self and inclusive) and by function. Idle time is left out of the percentages.
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function category(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  if (url.startsWith('node:')) return url.replace(/^node:(internal\/)?/, 'node:').split('/').slice(0, 2).join('/');
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  // Without the extension: a service built to dist/ (.js) and the floor run from source (.ts) share src/ files.
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1).replace(/\.(js|ts)$/, '');
  return path.basename(url);
}

/** What one profile file spent, in µs of busy time: by package/source file and by function. */
interface ProfileTotals {
  busy: number;
  idle: number;
  loading: number;
  selfCat: Map<string, number>;
  inclCat: Map<string, number>;
  selfFn: Map<string, number>;
  inclSrcFn: Map<string, number>;
}

function readProfile(file: string): ProfileTotals {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const t: ProfileTotals = { busy: 0, idle: 0, loading: 0, selfCat: new Map(), inclCat: new Map(), selfFn: new Map(), inclSrcFn: new Map() };
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  // Start-up (module loading and compiling) is not request work: samples under a module load are left out.
  const loadingIds = new Set<number>();
  const markLoading = (id: number, under: boolean) => {
    const n = byId.get(id)!;
    const here = under || /^node:modules\/(cjs|esm)/.test(category(n.callFrame.url, n.callFrame.functionName));
    if (here) loadingIds.add(id);
    for (const c of n.children ?? []) markLoading(c, here);
  };
  markLoading(p.nodes[0].id, false);
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') {
      t.idle += dt;
      return;
    }
    if (loadingIds.has(id)) {
      t.loading += dt;
      return;
    }
    t.busy += dt;
    const cat = category(url, functionName);
    add(t.selfCat, cat, dt);
    add(t.selfFn, `${functionName || '(anonymous)'}  ${cat}${url ? `:${lineNumber + 1}` : ''}`, dt);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cf = byId.get(cur)!.callFrame;
      const c = category(cf.url, cf.functionName);
      if (c === '(root)') continue;
      if (!seen.has(c)) add(t.inclCat, c, dt);
      seen.add(c);
      if (c.startsWith('src/')) {
        const k = `${cf.functionName || '(anonymous)'}  ${c}:${cf.lineNumber + 1}`;
        if (!seen.has(k)) add(t.inclSrcFn, k, dt);
        seen.add(k);
      }
    }
  });
  return t;
}

function profileFiles(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(dir, f)) : [];
}

export function summariseProfiles(dir: string, top = 25): string {
  const files = profileFiles(dir);
  if (files.length === 0) return `no CPU profile in ${dir}`;
  const out: string[] = [];
  for (const f of files) {
    const t = readProfile(f);
    const pct = (us: number) => `${((100 * us) / t.busy).toFixed(1).padStart(5)} %`;
    const table = (title: string, m: Map<string, number>) => {
      out.push(`  ${title}`);
      for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) out.push(`    ${pct(v)}  ${k}`);
    };
    out.push(`CPU profile ${f}: busy ${(t.busy / 1e6).toFixed(1)} s (percentages below), ` +
      `module loading ${(t.loading / 1e6).toFixed(1)} s and idle ${(t.idle / 1e6).toFixed(1)} s left out`);
    table('self time by package / source file', t.selfCat);
    table('inclusive time by package / source file (on the stack)', t.inclCat);
    table('inclusive time by function of src/', t.inclSrcFn);
    table('self time by function', t.selfFn);
  }
  return out.join('\n');
}

export interface ProfiledProcess {
  label: string;
  /** The directory its --cpu-prof wrote to (one profile file). */
  dir: string;
  /** The process's CPU per request over the measured windows: each profile's shares are scaled to it. */
  cpuMsPerRequest: number;
}

/**
 * Two processes' profiles side by side in µs per request (each one's busy-time shares times its measured CPU
 * per request), sorted by the difference: where the first spends more per request than the second (the
 * service against the framework floor). Shares hold up better than absolute CPU on a shared machine, where a
 * busy neighbour slows every function alike; the scaling makes the two processes comparable.
 */
export function compareProfiles(a: ProfiledProcess, b: ProfiledProcess, top = 30): string {
  const [fa] = profileFiles(a.dir);
  const [fb] = profileFiles(b.dir);
  if (!fa || !fb) return `no CPU profile to compare in ${fa ? b.dir : a.dir}`;
  const ta = readProfile(fa);
  const tb = readProfile(fb);
  const perRequest = (t: ProfileTotals, p: ProfiledProcess, us: number) => (us * 1000 * p.cpuMsPerRequest) / t.busy;
  const out = [`µs per request: ${a.label} (${a.cpuMsPerRequest.toFixed(3)} ms) against ${b.label} (${b.cpuMsPerRequest.toFixed(3)} ms), ` +
    `sorted by the difference; ${fa}, ${fb}`];
  const table = (title: string, key: 'selfCat' | 'inclCat' | 'selfFn' | 'inclSrcFn') => {
    out.push(`  ${title}`, `    ${a.label.padStart(9)} ${b.label.padStart(9)}  difference`);
    const keys = new Set([...ta[key].keys(), ...tb[key].keys()]);
    const rows = [...keys].map((k) => [k, perRequest(ta, a, ta[key].get(k) ?? 0), perRequest(tb, b, tb[key].get(k) ?? 0)] as const);
    for (const [k, x, y] of rows.sort((r, s) => s[1] - s[2] - (r[1] - r[2])).slice(0, top)) {
      out.push(`    ${x.toFixed(1).padStart(9)} ${y.toFixed(1).padStart(9)}  ${(x - y).toFixed(1).padStart(10)}  ${k}`);
    }
  };
  table('self time by package / source file', 'selfCat');
  table('self time by function', 'selfFn');
  table('inclusive time by function of src/', 'inclSrcFn');
  return out.join('\n');
}

if (require.main === module) {
  console.log(summariseProfiles(process.argv[2] ?? '.tmp/bench-profile'));
}

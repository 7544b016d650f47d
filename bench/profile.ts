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
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1).replace(/^file:\/\//, '');
  return path.basename(url);
}

export function summariseProfiles(dir: string, top = 25): string {
  if (!existsSync(dir)) return `no CPU profile in ${dir}`;
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) return `no CPU profile in ${dir}`;
  const out: string[] = [];
  for (const f of files) {
    const p = JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as CpuProfile;
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const selfCat = new Map<string, number>();
    const inclCat = new Map<string, number>();
    const selfFn = new Map<string, number>();
    const inclSrcFn = new Map<string, number>();
    let busy = 0;
    let idle = 0;
    let loading = 0;
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
      const node = byId.get(id)!;
      const { functionName, url, lineNumber } = node.callFrame;
      if (functionName === '(idle)') {
        idle += dt;
        return;
      }
      if (loadingIds.has(id)) {
        loading += dt;
        return;
      }
      busy += dt;
      const cat = category(url, functionName);
      selfCat.set(cat, (selfCat.get(cat) ?? 0) + dt);
      const fnKey = `${functionName || '(anonymous)'}  ${cat}${url ? `:${lineNumber + 1}` : ''}`;
      selfFn.set(fnKey, (selfFn.get(fnKey) ?? 0) + dt);
      const seen = new Set<string>();
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const cf = byId.get(cur)!.callFrame;
        const c = category(cf.url, cf.functionName);
        if (c === '(root)') continue;
        if (!seen.has(c)) inclCat.set(c, (inclCat.get(c) ?? 0) + dt);
        seen.add(c);
        if (c.startsWith('src/')) {
          const k = `${cf.functionName || '(anonymous)'}  ${c}:${cf.lineNumber + 1}`;
          if (!seen.has(k)) inclSrcFn.set(k, (inclSrcFn.get(k) ?? 0) + dt);
          seen.add(k);
        }
      }
    });
    const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`;
    const table = (title: string, m: Map<string, number>) => {
      out.push(`  ${title}`);
      for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) out.push(`    ${pct(v)}  ${k}`);
    };
    out.push(`CPU profile ${path.join(dir, f)}: busy ${(busy / 1e6).toFixed(1)} s (percentages below), ` +
      `module loading ${(loading / 1e6).toFixed(1)} s and idle ${(idle / 1e6).toFixed(1)} s left out`);
    table('self time by package / source file', selfCat);
    table('inclusive time by package / source file (on the stack)', inclCat);
    table('inclusive time by function of src/', inclSrcFn);
    table('self time by function', selfFn);
  }
  return out.join('\n');
}

if (require.main === module) {
  console.log(summariseProfiles(process.argv[2] ?? '.tmp/bench-profile'));
}

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * The pages' browser bundles: src/pages-client/*.ts and pages.css, bundled by esbuild into dist/pages/.
 * `npm run build` writes them (scripts/build-pages.ts); a service that finds them missing or older than
 * their sources builds them at start (esbuild is a dev dependency, so a production install must have built).
 */
export const BUNDLE_ENTRIES = {
  'pay.js': 'src/pages-client/pay.ts',
  'onboarding.js': 'src/pages-client/onboarding.ts',
  'pages.css': 'src/pages-client/pages.css',
  'dashboard.js': 'src/pages-client/dashboard.ts',
  'handle.js': 'src/pages-client/handle.ts',
  'dashboard.css': 'src/pages-client/dashboard.css',
} as const;

export type BundleName = keyof typeof BUNDLE_ENTRIES;

export interface Bundles {
  files: Record<BundleName, Buffer>;
  /** Project files (not node_modules) that went into the bundles, relative to the project root. */
  inputs: string[];
}

interface Manifest {
  files: Record<string, string>;
  inputs: string[];
}

/** The project root: the nearest directory above this file holding package.json (works from src/ and dist/src/). */
export function projectRoot(from = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${from}`);
    dir = up;
  }
  return dir;
}

export const bundleDir = (root = projectRoot()) => join(root, 'dist', 'pages');

export async function buildBundles(root = projectRoot()): Promise<Bundles> {
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch {
    throw new Error('Page bundles are missing (dist/pages) and esbuild is not installed: run `npm run build` where dev dependencies are installed.');
  }
  const names = Object.keys(BUNDLE_ENTRIES) as BundleName[];
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: names.map((n) => ({ in: BUNDLE_ENTRIES[n], out: n.replace(/\.(js|css)$/, '') })),
    outdir: 'out',
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
    legalComments: 'none',
    charset: 'utf8',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const files = {} as Record<BundleName, Buffer>;
  for (const out of result.outputFiles) {
    const name = out.path.split(/[\\/]/).pop() as BundleName;
    if (name in BUNDLE_ENTRIES) files[name] = Buffer.from(out.contents);
  }
  for (const n of names) if (!files[n]) throw new Error(`esbuild produced no ${n}`);
  const inputs = Object.keys(result.metafile.inputs).filter((p) => !p.includes('node_modules'));
  return { files, inputs };
}

export function writeBundles(b: Bundles, dir = bundleDir()): void {
  mkdirSync(dir, { recursive: true });
  // Each file is renamed into place, so a concurrent reader (another service starting) never sees half a file;
  // the manifest goes last and marks the set complete.
  const put = (name: string, body: Buffer | string) => {
    const tmp = join(dir, `.${name}.${process.pid}.tmp`);
    writeFileSync(tmp, body);
    renameSync(tmp, join(dir, name));
  };
  for (const [name, body] of Object.entries(b.files)) put(name, body);
  const manifest: Manifest = { files: Object.fromEntries(Object.entries(b.files).map(([n, body]) => [n, sha256(body)])), inputs: b.inputs };
  put('manifest.json', JSON.stringify(manifest, null, 2));
}

/** The bundles on disk, or null when some are missing, damaged, or older than a source file that still exists. */
export function readBundles(dir = bundleDir(), root = projectRoot()): Bundles | null {
  const manifestPath = join(dir, 'manifest.json');
  if (!existsSync(manifestPath)) return null;
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Manifest;
  } catch {
    return null;
  }
  const builtAt = statSync(manifestPath).mtimeMs;
  // Without sources (a production image) nothing can be newer.
  if (manifest.inputs.some((p) => existsSync(resolve(root, p)) && statSync(resolve(root, p)).mtimeMs > builtAt)) return null;
  const files = {} as Record<BundleName, Buffer>;
  for (const name of Object.keys(BUNDLE_ENTRIES) as BundleName[]) {
    const path = join(dir, name);
    if (!existsSync(path)) return null;
    files[name] = readFileSync(path);
    if (sha256(files[name]) !== manifest.files[name]) return null;
  }
  return { files, inputs: manifest.inputs };
}

/** What the service serves: the built bundles if current, else a fresh build (written back when possible). */
export async function loadBundles(onBuilt?: (why: string) => void): Promise<Bundles> {
  const existing = readBundles();
  if (existing) return existing;
  const built = await buildBundles();
  try {
    writeBundles(built);
  } catch {
    // A read-only deployment still serves what it built in memory.
  }
  onBuilt?.('dist/pages was missing or older than its sources');
  return built;
}

export function sha256(body: Buffer | string): string {
  return createHash('sha256').update(body).digest('hex');
}

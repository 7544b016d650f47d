import { buildBundles, bundleDir, writeBundles } from '../src/modules/pages/bundle';

/** `npm run build`: bundles the pages' browser scripts and styles into dist/pages/ (see src/modules/pages/bundle.ts). */
async function main(): Promise<void> {
  const started = Date.now();
  const bundles = await buildBundles();
  writeBundles(bundles);
  const sizes = Object.entries(bundles.files).map(([name, body]) => `${name} ${(body.length / 1024).toFixed(1)} KiB`);
  console.log(`page bundles → ${bundleDir()}: ${sizes.join(', ')} (${Date.now() - started} ms)`);
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});

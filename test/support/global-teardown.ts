export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __chainNode?: { stop(): Promise<void> } }).__chainNode?.stop();
}

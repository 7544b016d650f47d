// Preloaded (-r) into every child of the bench: when the bench dies in any way its IPC channel closes and the
// child exits, so no orphan keeps a port or a database connection. (A data: URL --import would do the same but
// makes Node load the entry point through the ESM loader, which cannot run .ts through @swc-node/register.)
process.on('disconnect', () => process.exit(0));

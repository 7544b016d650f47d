// Preloaded (-r) into every child of the bench: when the bench dies in any way its IPC channel closes and the
// child exits, so no orphan keeps a port or a database connection. The channel is unref'd so that it alone
// does not keep a child alive (a one-shot command such as the migration still ends on its own).
// (A data: URL --import would do the same but makes Node load the entry point through the ESM loader, which
// cannot run .ts through @swc-node/register.)
process.on('disconnect', () => process.exit(0));
if (process.channel) process.channel.unref();

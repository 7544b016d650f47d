/**
 * The text with every URL in it cut to its origin (scheme, host and port). RPC and webhook URLs often carry a
 * key in their path or query, or a user and password: error messages that quote them must not.
 */
export function urlsToOrigins(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*):\/\/[^\s"'<>]+/gi, (u) => {
    try {
      const url = new URL(u);
      return `${url.protocol}//${url.host}`;
    } catch {
      return '[url]';
    }
  });
}

/** The value of the Prometheus sample `name` whose labels include `labels`, or null when there is none. */
export function sample(text: string, name: string, labels: Record<string, string>): number | null {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const inside = line.slice(line.indexOf('{') + 1, line.lastIndexOf('}')).split(',');
    if (want.every((w) => inside.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return null;
}

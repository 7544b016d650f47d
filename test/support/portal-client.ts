/** A browser stand-in: a cookie jar, no automatic redirects. */
export class PortalClient {
  readonly cookies = new Map<string, string>();
  constructor(private readonly base: string) {}

  async request(method: string, path: string, form?: Record<string, string | string[]>) {
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (form) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(form)) for (const x of Array.isArray(v) ? v : [v]) params.append(k, x);
      body = params.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const res = await fetch(`${this.base}${path}`, { method, headers, body, redirect: 'manual' });
    const setCookies = res.headers.getSetCookie();
    for (const c of setCookies) {
      const [pair, ...attrs] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=Thu, 01 Jan 1970/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: res.status, location: res.headers.get('location'), headers: res.headers, setCookies, text: await res.text() };
  }

  get(path: string) {
    return this.request('GET', path);
  }

  post(path: string, form: Record<string, string | string[]> = {}) {
    return this.request('POST', path, form);
  }

  /** The CSRF token of the forms on the page at path. */
  async csrf(path: string): Promise<string> {
    const page = await this.get(path);
    const m = /name="_csrf" value="([^"]+)"/.exec(page.text);
    if (!m) throw new Error(`no CSRF field on ${path} (${page.status})`);
    return m[1];
  }

  async signIn(email: string, password: string) {
    const token = await this.csrf('/portal/login');
    return this.post('/portal/login', { _csrf: token, email, password });
  }
}

/** The page's calls to its own JSON API (same origin; CSP connect-src 'self'). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly body: Record<string, any>,
  ) {
    super(`${status} ${code}`);
  }
}

/** fetch could not reach the server at all (offline, connection reset). */
export class NetworkError extends Error {}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export async function api<T = Record<string, any>>(method: HttpMethod, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: {
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...extraHeaders,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'same-origin',
    });
  } catch {
    throw new NetworkError('network');
  }
  let json: Record<string, any> = {};
  try {
    json = (await res.json()) as Record<string, any>;
  } catch {
    // A proxy's HTML error page: keep the status, no code.
  }
  if (!res.ok) throw new ApiError(res.status, typeof json.error === 'string' ? json.error : `http_${res.status}`, json);
  return json as T;
}

/** Plain words for failures every page shares; undefined when the caller must explain it. */
export function commonProblem(e: unknown): string | undefined {
  if (e instanceof NetworkError) return 'We could not reach the server. Check your connection and try again.';
  if (e instanceof ApiError) {
    if (e.status === 429) return 'Too many attempts from your connection. Please wait a minute and try again.';
    if (e.status >= 500) return 'Something went wrong on our side. Please try again in a moment.';
  }
  return undefined;
}

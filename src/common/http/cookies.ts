import type { Request, Response } from 'express';

/** One cookie of the request, URL-decoded; undefined when absent or malformed. */
export function cookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      try {
        return decodeURIComponent(value);
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

export interface CookieOptions {
  secure: boolean;
  path: string;
  maxAgeMs?: number;
}

/** Session cookies are always HttpOnly and SameSite=Lax; Secure when the service is served over https. */
export function setCookie(res: Response, name: string, value: string, o: CookieOptions): void {
  res.cookie(name, value, { httpOnly: true, sameSite: 'lax', secure: o.secure, path: o.path, ...(o.maxAgeMs !== undefined ? { maxAge: o.maxAgeMs } : {}) });
}

export function clearCookie(res: Response, name: string, o: CookieOptions): void {
  res.clearCookie(name, { httpOnly: true, sameSite: 'lax', secure: o.secure, path: o.path });
}

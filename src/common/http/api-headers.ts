import type { NextFunction, Request, Response } from 'express';

/**
 * Where signed-in, per-merchant or capability JSON is served to browsers: the dashboard's API and the handle
 * page's (DESIGN §5), and the APIs that a secret in the URL opens (a payer's plan, a pay link, an onboarding
 * link), whose answers no cache along the way may keep.
 */
export const BROWSER_API_PATHS = ['/dashboard/api', '/m/api', '/plan/api', '/pay/api', '/onboarding/api'];

/**
 * Set before anything else runs, so every answer carries them, errors of guards and body parsing included:
 * a merchant's data is never kept by a shared or browser cache, and never sniffed into another type.
 */
export function browserApiHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  next();
}

/**
 * With an https PUBLIC_URL, every answer of the public listener tells browsers to use https only, for a year:
 * a page or a sign-in message reached once over plain http (a typed address, a link rewritten on the way) is
 * what lets a network attacker serve its own page under our name. Only the host itself, since its
 * subdomains are the operator's, not ours. Null (no header) for http, as in development.
 */
export function strictTransport(publicUrl: string): ((req: Request, res: Response, next: NextFunction) => void) | null {
  if (new URL(publicUrl).protocol !== 'https:') return null;
  return (req, res, next) => {
    if (!(req as { adminListener?: boolean }).adminListener) res.setHeader('Strict-Transport-Security', 'max-age=31536000');
    next();
  };
}

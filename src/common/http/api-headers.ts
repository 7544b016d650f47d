import type { NextFunction, Request, Response } from 'express';

/** Where signed-in or per-merchant JSON is served to browsers (DESIGN §5): the dashboard's API and the handle page's. */
export const BROWSER_API_PATHS = ['/dashboard/api', '/m/api'];

/**
 * Set before anything else runs, so every answer carries them, errors of guards and body parsing included:
 * a merchant's data is never kept by a shared or browser cache, and never sniffed into another type.
 */
export function browserApiHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  next();
}

import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { AppError } from '../errors';

export const MAX_BODY = '64kb';

type BodyProblem = 'invalid_json' | 'payload_too_large';
export interface ParsedRequest {
  bodyProblem?: BodyProblem;
  id?: string;
}

const parser = express.json({ limit: MAX_BODY, strict: false, type: () => true });

/**
 * Parses every body as JSON but defers a parse failure: DESIGN's order of checks puts auth, scope and the
 * rate limit before the body, so the failure is raised by BodyCheckInterceptor after the guards.
 */
export function jsonBody(req: Request & ParsedRequest, res: Response, next: NextFunction): void {
  req.id = (typeof req.headers['x-request-id'] === 'string' && req.headers['x-request-id'].slice(0, 64)) || randomUUID();
  if (req.method === 'GET' || req.method === 'HEAD') return next();
  parser(req, res, (err?: { type?: string }) => {
    if (err) {
      req.bodyProblem = err.type === 'entity.too.large' ? 'payload_too_large' : 'invalid_json';
      req.body = undefined;
    }
    next();
  });
}

export function raiseBodyProblem(req: ParsedRequest): void {
  if (req.bodyProblem) throw new AppError(req.bodyProblem);
}

/** True when a parsed JSON value has an own key that names an object's prototype machinery, at any depth. */
export function hasForbiddenKey(value: unknown, depth = 0): boolean {
  if (depth > 32 || value === null || typeof value !== 'object') return false;
  for (const key of Object.keys(value)) {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') return true;
    if (hasForbiddenKey((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';

/** Runs after the guards: raises the deferred body failure (invalid_json, payload_too_large). */
@Injectable()
export class BodyCheckInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    raiseBodyProblem(context.switchToHttp().getRequest<ParsedRequest>());
    return next.handle();
  }
}

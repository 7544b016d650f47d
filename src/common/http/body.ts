import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { AppError } from '../errors';
import { isForbiddenKey } from '../forbidden-keys';

export const MAX_BODY = '64kb';
/** Express matches routes case-insensitively: so does this exemption for the portal's HTML forms. */
const PORTAL_PATH = /^\/portal(\/|$)/i;

type BodyProblem = 'invalid_json' | 'payload_too_large' | 'unsupported_media_type';
export interface ParsedRequest {
  bodyProblem?: BodyProblem;
  id?: string;
}

/** Request ids: a random per-process prefix and a counter — unique across instances, and no crypto per call. */
const ID_PREFIX = randomBytes(6).toString('base64url');
let idCounter = 0;
export function nextRequestId(): string {
  return `${ID_PREFIX}-${(++idCounter).toString(36)}`;
}

/**
 * JSON is UTF-8 (RFC 8259 §8.1). The decoder replaces bytes that are not with U+FFFD, so a memo or metadata sent
 * in Latin-1 (`caf\xe9`) was stored and shown as "caf\uFFFD" and answered 201: refused instead, as invalid_json.
 */
const parser = express.json({
  limit: MAX_BODY,
  strict: false,
  type: () => true,
  verify: (_req, _res, buf) => {
    if (!isUtf8(buf)) throw new Error('the body is not UTF-8');
  },
});

/** A request that carries body bytes: a positive Content-Length, or a chunked body (length unknown). */
export function hasBody(req: Request): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && Number(length) > 0;
}

/** The media type of a Content-Type header, lower-cased, without parameters (charset and the like). */
export function mediaType(req: Request): string | undefined {
  const header = req.headers['content-type'];
  return header ? header.split(';')[0].trim().toLowerCase() : undefined;
}

/**
 * Every `charset=` after a semicolon in a Content-Type header, lower-cased, inside a quoted value or not: the
 * decoder's parser skips quoted values, so `x="; charset=utf-8"; charset=utf-16le` is UTF-16 to it. A value is
 * the whole quoted string, or all up to the next semicolon, trimmed: `utf-8 x` and an unterminated `"utf-8` are
 * not UTF-8 (they were read as `utf-8`, then refused by the decoder as 400 invalid_json).
 */
function declaredCharsets(req: Request): string[] {
  return [...(req.headers['content-type'] ?? '').matchAll(/;\s*charset\s*=\s*(?:"([^"]*)"|([^;]*))/gi)].map((m) =>
    (m[1] ?? m[2]).trim().toLowerCase(),
  );
}

/**
 * DESIGN §7/§8: a non-empty body that is not application/json (a missing Content-Type included) is refused
 * with 415, so a cross-site HTML form (text/plain, urlencoded, multipart) can never be read as JSON. So is
 * JSON declared in a charset other than UTF-8 (RFC 8259 §8.1): the parser decoded UTF-16 as declared while the
 * byte check read UTF-8, so an ASCII-only UTF-16 body was taken and an accented one refused as invalid_json.
 */
export function unsupportedMediaType(req: Request): boolean {
  if (!hasBody(req)) return false;
  return mediaType(req) !== 'application/json' || declaredCharsets(req).some((charset) => charset !== 'utf-8');
}

/**
 * Parses JSON bodies but defers every failure (not JSON, too large, not application/json): DESIGN's order of
 * checks puts auth, scope and the rate limit before the body, so the failure is raised by BodyCheckGuard, the
 * last guard. A body of another media type is not read (a chunked one up to its first byte, to tell whether it
 * is empty); Node discards the rest after the answer.
 */
export function jsonBody(req: Request & ParsedRequest, res: Response, next: NextFunction): void {
  req.id = (typeof req.headers['x-request-id'] === 'string' && req.headers['x-request-id'].slice(0, 64)) || nextRequestId();
  if (req.method === 'GET' || req.method === 'HEAD') return next();
  // The portal takes its HTML forms only, read by their own parser (mounted on /portal ahead of this one),
  // which refuses any other body: nothing under /portal is read as JSON.
  if (PORTAL_PATH.test(req.path)) return next();
  if (unsupportedMediaType(req)) {
    req.body = undefined;
    // A chunked body has no length to tell: one that ends without a byte is no body (DESIGN §8, bodiless calls
    // are unaffected). A client that sends an empty chunked POST (a cancel) got 415 and the call did nothing.
    if (req.headers['content-length'] === undefined) {
      return anyByte(req, (some) => {
        if (some) req.bodyProblem = 'unsupported_media_type';
        next();
      });
    }
    req.bodyProblem = 'unsupported_media_type';
    return next();
  }
  parser(req, res, (err?: { type?: string }) => {
    if (err) {
      req.bodyProblem = err.type === 'entity.too.large' ? 'payload_too_large' : 'invalid_json';
      req.body = undefined;
    }
    next();
  });
}

/**
 * Reads a body up to its first byte or to its end: `then(true)` on a byte. The rest is let flow with no reader
 * (dropped): once a body has had a reader Node no longer drains it after the answer, and a paused one would stall
 * the connection's next request.
 */
function anyByte(req: Request, then: (some: boolean) => void): void {
  const done = (some: boolean) => {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onError);
    then(some);
  };
  const onData = () => {
    done(true);
    req.resume();
  };
  const onEnd = () => done(false);
  const onError = () => done(true);
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
}

export function raiseBodyProblem(req: ParsedRequest): void {
  if (req.bodyProblem) throw new AppError(req.bodyProblem);
}

/** No partner body nests deeper than a few levels; deeper input is refused before anything recurses over it. */
export const MAX_BODY_DEPTH = 32;

/** True when a parsed JSON value nests objects or arrays more than `max` levels deep (recursion bounded by max). */
export function nestedDeeperThan(value: unknown, max: number, depth = 0): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (depth >= max) return true;
  for (const v of Object.values(value)) if (nestedDeeperThan(v, max, depth + 1)) return true;
  return false;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether Postgres stores `s` as sent: no NUL character (text and jsonb reject it), no lone UTF-16 surrogate. */
export function isStorableText(s: string): boolean {
  return !s.includes('\u0000') && !LONE_SURROGATE.test(s);
}

/**
 * Field errors for strings Postgres cannot store as sent: a NUL character (text and jsonb reject it, which
 * would surface as a 500) or a lone UTF-16 surrogate (stored as U+FFFD, so it would not round-trip).
 */
export function textErrors(value: unknown, path = '', depth = 0): { field: string; message: string }[] {
  const bad = (s: string) => !isStorableText(s);
  if (typeof value === 'string') return bad(value) ? [{ field: path || '(body)', message: 'must be well-formed text without NUL characters' }] : [];
  if (value === null || typeof value !== 'object' || depth > MAX_BODY_DEPTH) return [];
  const out: { field: string; message: string }[] = [];
  for (const [key, v] of Object.entries(value)) {
    const field = path ? `${path}.${key}` : key;
    if (bad(key)) out.push({ field, message: 'key must be well-formed text without NUL characters' });
    out.push(...textErrors(v, field, depth + 1));
  }
  return out;
}

/** True when a parsed JSON value has an own key that names an object's prototype machinery, at any depth. */
export function hasForbiddenKey(value: unknown, depth = 0): boolean {
  if (depth > 32 || value === null || typeof value !== 'object') return false;
  for (const key of Object.keys(value)) {
    if (isForbiddenKey(key)) return true;
    if (hasForbiddenKey((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';

/**
 * The last guard of every controller that reads a body: raises the deferred body failure (invalid_json,
 * payload_too_large) after auth, scope and the rate limit (DESIGN's order of checks). A guard, not a global
 * interceptor, so calls without a body problem pay no interceptor pipeline.
 */
@Injectable()
export class BodyCheckGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    raiseBodyProblem(context.switchToHttp().getRequest<ParsedRequest>());
    return true;
  }
}

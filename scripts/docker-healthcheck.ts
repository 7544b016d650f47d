export {};

/**
 * HEALTHCHECK of the image (node dist/scripts/docker-healthcheck.js): exit 0 when HEALTHCHECK_URL answers
 * 200 within 3 s. Default: the API's readiness on PORT; the worker sets HEALTHCHECK_URL to its own listener
 * (WORKER_ADMIN_PORT).
 */
const url = process.env.HEALTHCHECK_URL || `http://127.0.0.1:${process.env.PORT || 3000}/health/ready`;

fetch(url, { signal: AbortSignal.timeout(3000) }).then(
  (res) => process.exit(res.status === 200 ? 0 : 1),
  () => process.exit(1),
);

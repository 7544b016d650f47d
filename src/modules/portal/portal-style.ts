import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The portal's layer over the pages' stylesheet (pages.css: colours, type, cards, buttons, fields), for
 * what the pay and onboarding pages do not have: a header with navigation, tables, wider layout. portal.css
 * sits beside this file in src/ and, copied by nest-cli as an asset, in dist/src/; it is read once at load
 * and served from memory under /portal/assets with its content hash in the URL.
 */
export const PORTAL_CSS = readFileSync(join(__dirname, 'portal.css'), 'utf8');

export const PORTAL_CSS_VERSION = createHash('sha256').update(PORTAL_CSS).digest('hex').slice(0, 16);
export const PORTAL_CSS_URL = `/portal/assets/portal.css?v=${PORTAL_CSS_VERSION}`;

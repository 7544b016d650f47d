/**
 * HTML built from tagged templates: every interpolated value is escaped unless it is already SafeHtml
 * (the result of another `html` template, or `trustedHtml` for markup the server generated itself).
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type HtmlValue = SafeHtml | string | number | bigint | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function render(v: HtmlValue): string {
  if (v === null || v === undefined || v === false || v === true) return '';
  if (v instanceof SafeHtml) return v.value;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new SafeHtml(out);
}

/** Markup the server produced itself (the QR code's SVG); never text that came from a request or the database. */
export function trustedHtml(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** `hidden` when the condition is false: the one way the pages hide a part. */
export function hiddenUnless(shown: boolean): SafeHtml {
  return new SafeHtml(shown ? '' : ' hidden');
}

export interface PageShell {
  title: string;
  /** URLs from AssetStore.url(), content-hashed. */
  stylesheet: string;
  script?: string;
  body: SafeHtml;
}

export function pageDocument(p: PageShell): string {
  return `<!doctype html>${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${p.title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${p.stylesheet}">
${p.script ? html`<script src="${p.script}" defer></script>` : ''}
</head>
<body>
${p.body}
</body>
</html>
`}`;
}

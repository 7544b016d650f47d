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

/** A text field with its label, optional hint and error slot (`<id>-error`), wired by aria-describedby. */
export function textField(o: { id: string; name: string; label: string; value: string | null; hint?: string; type?: string; extra?: SafeHtml }): SafeHtml {
  const described = [o.hint ? `${o.id}-hint` : '', `${o.id}-error`].filter(Boolean).join(' ');
  return html`<label for="${o.id}">${o.label}</label>
<input type="${o.type ?? 'text'}" id="${o.id}" name="${o.name}" value="${o.value ?? ''}" aria-describedby="${described}"${o.extra ?? ''}>
${o.hint ? html`<p class="hint" id="${o.id}-hint">${o.hint}</p>` : ''}
<p class="field-error" id="${o.id}-error" aria-live="polite"></p>`;
}

const currencyNames = new Intl.DisplayNames(['en'], { type: 'currency' });

/** `<option>` of a lower-case currency code: "EUR — Euro". */
export function currencyOption(code: string, selected: string | null): SafeHtml {
  const upper = code.toUpperCase();
  const name = currencyNames.of(upper);
  return html`<option value="${code}"${code === selected ? html` selected` : ''}>${upper}${name && name !== upper ? ` — ${name}` : ''}</option>`;
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

import { html, pageDocument } from './html';

interface Terms {
  effective: string;
  sections: { heading: string; paragraphs: string[] }[];
}

/**
 * The merchant terms, one entry per version a merchant may have accepted: a version is never edited once
 * published (merchants.terms_version records which one each merchant accepted), a change is a new version.
 */
export const TERMS: Readonly<Record<string, Terms>> = {
  '2026-11-01': {
    effective: '1 November 2026',
    sections: [
      {
        heading: 'What the service does',
        paragraphs: [
          'The service creates payment requests on behalf of your platform and shows your payers a page to pay them in a stablecoin. Payments go directly from the payer’s wallet to the wallet you connected. The service never holds your funds.',
          'The service watches the blockchain and tells your platform when a payment request has been paid. A payment counts only when a transfer of exactly the requested amount of the requested token reaches your wallet on the requested network within the request’s time window.',
        ],
      },
      {
        heading: 'Your wallet',
        paragraphs: [
          'You prove that you control the wallet by signing a message with it. You are responsible for keeping access to that wallet. Nobody, including the service, can recover funds sent to a wallet you lost access to.',
          'One wallet can belong to one merchant only.',
        ],
      },
      {
        heading: 'Prices and conversion',
        paragraphs: [
          'Prices are set in your currency and converted to the token at the rate in force when the request is created. The converted amount is rounded up to the token’s smallest unit and may be raised by a few smallest units so that every open request has a distinct amount.',
        ],
      },
      {
        heading: 'Payments that do not match',
        paragraphs: [
          'Transfers of a different amount or token, on another network or outside the time window do not mark any request as paid. They still arrive in your wallet; settling them with the payer is between you and the payer.',
        ],
      },
      {
        heading: 'Your details',
        paragraphs: [
          'The service stores the details you give here and shows your display name to payers. Your platform can read and update them.',
        ],
      },
      {
        heading: 'Changes',
        paragraphs: [
          'New versions of these terms are published under a new version number. Versions you already accepted stay as they were.',
        ],
      },
    ],
  },
};

export function renderTermsPage(version: string, terms: Terms, stylesheet: string): string {
  return pageDocument({
    title: `Merchant terms, version ${version}`,
    stylesheet,
    body: html`<main id="terms" class="terms">
<article class="card" aria-labelledby="terms-title">
<p class="eyebrow">Version ${version}</p>
<h1 id="terms-title">Merchant terms</h1>
<p class="hint">In effect from ${terms.effective}.</p>
${terms.sections.map((s) => html`<h2>${s.heading}</h2>${s.paragraphs.map((p) => html`<p>${p}</p>`)}`)}
</article>
</main>`,
  });
}

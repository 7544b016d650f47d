/** Small DOM helpers shared by the page scripts. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} missing`);
  return el as T;
}

/**
 * Sets the text of a message element; CSS hides it while empty. Live regions stay in the document (never
 * `hidden`), or screen readers would miss the first message.
 */
export function say(el: HTMLElement, text: string): void {
  el.textContent = text;
}

/** Copy buttons: `data-copy` holds the text; the button's label confirms, and so does a live region. */
export function wireCopyButtons(announce: HTMLElement): void {
  for (const button of Array.from(document.querySelectorAll<HTMLButtonElement>('button[data-copy]'))) {
    const label = button.textContent ?? 'Copy';
    button.addEventListener('click', async () => {
      const text = button.dataset.copy ?? '';
      let copied = false;
      try {
        await navigator.clipboard.writeText(text);
        copied = true;
      } catch {
        copied = legacyCopy(text);
      }
      button.textContent = copied ? 'Copied' : 'Copy failed';
      say(announce, copied ? `${button.dataset.copyName ?? 'Text'} copied.` : 'Could not copy; select the text and copy it by hand.');
      window.setTimeout(() => {
        button.textContent = label;
      }, 2000);
    });
  }
}

/** Without the async clipboard (older browsers, insecure contexts): a hidden textarea and execCommand. */
function legacyCopy(text: string): boolean {
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'offscreen';
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

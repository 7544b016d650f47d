import { escapeHtml, html, trustedHtml } from './html';

describe('html templates', () => {
  it('escapes every interpolated value, in text and in attributes', () => {
    const name = `Ben & Jerry's <script>alert("x")</script>`;
    expect(html`<p title="${name}">${name}</p>`.value).toBe(
      '<p title="Ben &amp; Jerry&#39;s &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;">' +
        'Ben &amp; Jerry&#39;s &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</p>',
    );
  });

  it('nests templates and lists without escaping them twice, and drops null, undefined and booleans', () => {
    const items = ['a<b', 'c'].map((t) => html`<li>${t}</li>`);
    expect(html`<ul>${items}</ul>${null}${undefined}${false}`.value).toBe('<ul><li>a&lt;b</li><li>c</li></ul>');
    expect(html`${trustedHtml('<svg></svg>')}`.value).toBe('<svg></svg>');
    expect(escapeHtml(`"'&<>`)).toBe('&quot;&#39;&amp;&lt;&gt;');
  });
});

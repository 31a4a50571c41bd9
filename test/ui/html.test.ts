/** The status page's escaping (src/ui/html.ts): no interpolated value can add markup. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { escapeHtml, html } from '../../src/ui/html.js';

describe('html`…`', () => {
  it('escapes every value, in text and in quoted attributes; nested html is kept; arrays are joined', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (text, attr) => {
        const out = html`<p title="${attr}">${text}</p>`.text;
        const inner = out.slice(out.indexOf('>') + 1, out.lastIndexOf('</p>'));
        assert.ok(!/[<>"']/.test(inner) && !/[<>"']/.test(out.slice(10, out.indexOf('">'))), out);
        // Decoding the entities gives the value back.
        const decode = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
        assert.equal(decode(inner), text);
      }),
    );
    assert.equal(html`<ul>${['<a>', html`<li>${'&'}</li>`]}</ul>`.text, '<ul>&lt;a&gt;<li>&amp;</li></ul>');
    assert.equal(html`${undefined}${null}${false}${0}`.text, '0');
    assert.equal(escapeHtml(`"'<>&`), '&quot;&#39;&lt;&gt;&amp;');
  });
});

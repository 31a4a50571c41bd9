/**
 * HTML for the status page (issue 14): a tagged template that escapes every
 * interpolated value (HTML §13.1.2 text and attribute values: `&`, `<`, `>`, `"`, `'`),
 * so no string-built HTML reaches a response unescaped. Markup built by `html` itself is
 * kept as it is ({@link Html}); arrays are joined.
 */

/** Markup already escaped (made by {@link html} or {@link raw}). */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escape text for an HTML text node or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A value interpolated into {@link html}. */
export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('');
  return escapeHtml(String(value));
}

/** The tagged template: literal parts as written, every value escaped ({@link render}). */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/**
 * Trusted markup as is: only for constants of this code base (the inline style sheet and
 * script), never for data.
 */
export function raw(trusted: string): Html {
  return new Html(trusted);
}

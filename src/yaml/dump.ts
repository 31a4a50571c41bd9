/**
 * The one YAML serializer for everything bootwright emits (cloud-config, kubeadm
 * configuration). Values always go through it, never through string templates.
 */
import { DEFAULT_SCALAR_STYLE_RULES, dump, SCALAR_STYLE, type ScalarLayout, YAML11_SCHEMA } from 'js-yaml';

const STR_TAG = 'tag:yaml.org,2002:str';

/**
 * Plain scalars that YAML 1.1 (PyYAML, cloud-init) reads as strings but YAML 1.2 core or
 * go-yaml (kubeadm, through sigs.k8s.io/yaml) reads as numbers: `1e3`, `0o17`, `.5e1`.
 * go-yaml v2's float form is `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
 */
const OTHER_READERS_NUMBER = /^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?0o[0-7]+|[-+]?0b[01]+|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;

function quoteForEveryReader(layout: ScalarLayout): void {
  if (layout.style === SCALAR_STYLE.PLAIN && layout.node.tag === STR_TAG && OTHER_READERS_NUMBER.test(layout.node.value)) {
    layout.style = SCALAR_STYLE.SINGLE_QUOTED;
  }
}

const RULES = [quoteForEveryReader, ...Object.values(DEFAULT_SCALAR_STYLE_RULES)];

/** Options of {@link dumpYaml}. */
export interface DumpOptions {
  /**
   * Strings for which this holds are written double-quoted when on one line (multi-line
   * strings stay literal blocks): text substituted into them later (cloud-init Jinja)
   * then cannot change the YAML type or structure of the value.
   */
  doubleQuote?: (value: string) => boolean;
}

/**
 * Serialize a value as one YAML document.
 *
 * Uses the YAML 1.1 schema, so every string that a YAML 1.1 reader (cloud-init's PyYAML)
 * would take for a boolean, null, number or timestamp (`yes`, `on`, `~`, `0644`,
 * `2001-12-14`) is quoted, and additionally quotes the forms YAML 1.2 and go-yaml read
 * as numbers. Lines are never folded (`lineWidth: -1`), so long lines survive exactly;
 * multi-line strings become literal blocks with the right chomping. Key order is the
 * insertion order of the objects given: callers build objects in a fixed order.
 *
 * @param value plain data (objects, arrays, strings, numbers, booleans); `undefined`
 *   object members are skipped.
 * @param options.doubleQuote strings to write double-quoted ({@link DumpOptions})
 * @returns YAML text ending in a newline.
 */
export function dumpYaml(value: unknown, options: DumpOptions = {}): string {
  const { doubleQuote } = options;
  const rules = doubleQuote
    ? [
        (layout: ScalarLayout) => {
          if (layout.node.tag === STR_TAG && !layout.isKey && !layout.node.value.includes('\n') && doubleQuote(layout.node.value)) layout.style = SCALAR_STYLE.DOUBLE_QUOTED;
        },
        ...RULES,
      ]
    : RULES;
  return dump(value, { schema: YAML11_SCHEMA, lineWidth: -1, noRefs: true, skipInvalid: true, scalarStyleRules: rules });
}

/**
 * The deepest nesting of objects and arrays a JSON body may have. JSON.parse takes any depth, but serialising the
 * value again (JSON.stringify recurses) overflows the stack somewhere past a few thousand levels, and no worker
 * could read such an input anyway: Python's json module stops near 1,000.
 */
export const MAX_JSON_DEPTH = 1000;

/** The index just past the string whose opening quote is at `open`, or -1 when it never closes. */
function stringEnd(text: string, open: number): number {
  let end = open;
  for (;;) {
    end = text.indexOf('"', end + 1);
    if (end < 0) return -1;
    // Closed by a quote not escaped by an odd run of backslashes.
    let k = end - 1;
    while (text.charCodeAt(k) === 0x5c) k--;
    if ((end - 1 - k) % 2 === 0) return end + 1;
  }
}

/**
 * Whether JSON text nests objects or arrays deeper than `max`. One pass over the structure; string contents are
 * skipped with indexOf, so the check costs a fraction of JSON.parse. Malformed text is left to JSON.parse.
 */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  // Every level needs at least one bracket.
  if (text.length <= max) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: jump to its closing quote.
      const end = stringEnd(text, i);
      if (end < 0) return false;
      i = end - 1;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

/** The reason given when a body is refused for its depth. */
export const TOO_DEEP = `objects or arrays are nested deeper than ${MAX_JSON_DEPTH} levels`;

/**
 * `text` with the spans that `edit` finds outside strings replaced, or null when it found none. `edit(i)` says how
 * many characters from `i` to replace, and with what, or null to keep the character.
 */
function editOutsideStrings(text: string, edit: (i: number) => [length: number, replacement: string] | null) {
  const parts: string[] = [];
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) === 0x22) {
      const end = stringEnd(text, i);
      if (end < 0) break; // not JSON: the rest is left as it is
      i = end - 1;
      continue;
    }
    const found = edit(i);
    if (found === null) continue;
    parts.push(text.slice(from, i), found[1]);
    from = i + found[0];
    i = from - 1;
  }
  if (parts.length === 0) return null;
  parts.push(text.slice(from));
  return parts.join('');
}

const NON_FINITE = ['NaN', 'Infinity', '-Infinity'];

/**
 * JSON text with `NaN`, `Infinity` and `-Infinity` outside strings written as `null` (what JSON.stringify makes of
 * them), or null when there are none. Python's json.dumps writes them by default (allow_nan), so a worker whose
 * output holds a NaN would otherwise have its result refused and lost. A scan, not a regular expression: a string
 * of many megabytes (a base64 image) must not overflow the stack.
 */
export function nonFiniteAsNull(text: string): string | null {
  return editOutsideStrings(text, (i) => {
    const word = NON_FINITE.find((w) => text.startsWith(w, i));
    return word === undefined ? null : [word.length, 'null'];
  });
}

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The index just past the JSON value that starts at `i` (in text JSON.parse accepted). */
function valueEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === 0x22) return stringEnd(text, i);
  if (c !== 0x7b && c !== 0x5b) {
    let j = i;
    while (j < text.length) {
      const d = text.charCodeAt(j);
      if (d === 0x2c || d === 0x7d || d === 0x5d || isSpace(d)) break;
      j++;
    }
    return j;
  }
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const d = text.charCodeAt(j);
    if (d === 0x22) j = stringEnd(text, j) - 1;
    else if (d === 0x7b || d === 0x5b) depth++;
    else if ((d === 0x7d || d === 0x5d) && --depth === 0) return j + 1;
  }
  return text.length;
}

/**
 * The text of member `key` of the JSON object `text` (which JSON.parse accepted), exactly as sent, or undefined
 * when it has none; the last one when the key repeats, as JSON.parse takes it. Payloads are stored as their
 * senders wrote them: 64-bit integers, `1.0` and the rest of a number's spelling survive (a parse and a
 * JSON.stringify would change them), and a large output is not serialised again.
 */
export function memberText(text: string, key: string): string | undefined {
  return members(text).get(key);
}

/**
 * Every member of the JSON object `text` (which JSON.parse accepted), name to value text as sent, in one scan; a
 * repeated key keeps its last value, as JSON.parse does.
 */
export function members(text: string): Map<string, string> {
  const found = new Map<string, string>();
  let i = text.indexOf('{') + 1;
  for (;;) {
    while (i < text.length && (isSpace(text.charCodeAt(i)) || text.charCodeAt(i) === 0x2c)) i++;
    if (i >= text.length || text.charCodeAt(i) !== 0x22) return found;
    const keyEnd = stringEnd(text, i);
    const raw = text.slice(i + 1, keyEnd - 1);
    const name = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
    i = text.indexOf(':', keyEnd) + 1;
    while (isSpace(text.charCodeAt(i))) i++;
    const end = valueEnd(text, i);
    found.set(name, text.slice(i, end));
    i = end;
  }
}

/** JSON text without the white space between its tokens (strings, and so numbers as written, untouched). */
export function compactJson(text: string): string {
  const compact = editOutsideStrings(text, (i) => {
    let j = i;
    while (j < text.length && isSpace(text.charCodeAt(j))) j++;
    return j > i ? [j - i, ''] : null;
  });
  return compact ?? text;
}

/**
 * The deepest nesting of objects and arrays a JSON body may have. JSON.parse takes any depth, but serialising the
 * value again (JSON.stringify recurses) overflows the stack somewhere past a few thousand levels, and no worker
 * could read such an input anyway: Python's json module stops near 1,000.
 */
export const MAX_JSON_DEPTH = 1000;

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
      // A string: jump to its closing quote, one not escaped by an odd run of backslashes.
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return false;
        let k = end - 1;
        while (text.charCodeAt(k) === 0x5c) k--;
        if ((end - 1 - k) % 2 === 0) break;
      }
      i = end;
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

// The contract's text rules, shared by the peers: Python's strip and codepoint truncation.
'use strict';
// Python's str.strip(): Unicode whitespace (str.isspace), which differs from JS trim() at the edges
// (\x1c-\x1f and \x85 are whitespace in Python, \ufeff is not).
const WS = '[\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const STRIP = new RegExp(`^${WS}+|${WS}+$`, 'gu');
const strip = (s) => String(s).replace(STRIP, '');
/** The first `n` codepoints (not UTF-16 units). */
function take(s, n) {
  if (s.length <= n) return s; // fewer UTF-16 units than n means fewer codepoints too
  let i = 0, cp = 0;
  while (i < s.length && cp < n) { i += s.codePointAt(i) > 0xffff ? 2 : 1; cp++; }
  return s.slice(0, i);
}
const cpLen = (s) => { let n = 0; for (const _ of s) n++; return n; };
const ellipsize = (s, n) => (s.length > n && cpLen(s) > n ? take(s, n - 3) + '...' : s);

module.exports = { strip, take, ellipsize };

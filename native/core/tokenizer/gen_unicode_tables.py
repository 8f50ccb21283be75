#!/usr/bin/env python3
"""Generates unicode_tables.cc: per-code-point facts the BERT normalizer and
pre-tokenizer need, from python3's unicodedata (Unicode 14.0 on Debian 12) and
the Unicode Character Database's DerivedAge.txt (Debian package unicode-data).

    python3 native/core/tokenizer/gen_unicode_tables.py > native/core/tokenizer/unicode_tables.cc

The reference (HF tokenizers) mixes Unicode versions, and we follow it so that
ids match for every code point (test/native/tokenizer-parity.test.ts sweeps
them all):
- general categories (Mn, P*, Cf, Co) come from the unicode_categories crate,
  which is Unicode 8.0: characters assigned later have none of them, and the
  few whose category changed since 8.0 keep their 8.0 category (CATEGORY_8_0);
- canonical decompositions are those of characters assigned by 8.0 as well;
- lowercase is Rust's char::to_lowercase, which is newer than python's tables:
  the mappings added in Unicode 16.0 and 17.0 are listed in LOWERCASE_ADDED;
- White_Space (Rust's char::is_whitespace) is stable and listed here.

Per code point we store flags (White_Space, general-category groups, CJK
ideograph), the canonical combining class, and two mappings: the canonical decomposition (NFD of the single
code point) and the full lowercase mapping. Hangul syllables decompose
algorithmically in C++, so they are left out of the mapping pool.

The lookup is a two-stage table: kStage1[cp >> 7] picks a 128-entry block of
kStage2, whose entries index kRecords (distinct flag/mapping combinations).
"""
import sys
import unicodedata

SHIFT = 7
BLOCK = 1 << SHIFT

# Rust's char::is_whitespace is the White_Space property, which unicodedata
# does not expose (str.isspace() differs: it also accepts U+001C..U+001F).
# The set has been stable since Unicode 6.3 (U+180E left it then).
WHITE_SPACE = set(range(0x09, 0x0E)) | {0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}
WHITE_SPACE |= set(range(0x2000, 0x200B))

# The CJK blocks that BertNormalizer surrounds with spaces (same ranges as the
# reference implementation; Hangul, Hiragana and Katakana are not in them).
CJK_RANGES = [
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
]

REFERENCE_CATEGORY_AGE = (8, 0)
CATEGORY_8_0 = {0x166D: 'Po', 0x1734: 'Mn', 0x1885: 'Lo', 0x1886: 'Lo', 0xA9BD: 'Mc', 0x111C9: 'Po'}


def _lower_ranges():
    pairs = {0x1C89: 0x1C8A, 0xA7CB: 0x0264, 0xA7CC: 0xA7CD, 0xA7CE: 0xA7CF, 0xA7D2: 0xA7D3,
             0xA7D4: 0xA7D5, 0xA7DA: 0xA7DB, 0xA7DC: 0x019B}
    pairs.update({cp: cp + 0x20 for cp in range(0x10D50, 0x10D66)})   # Garay (16.0)
    pairs.update({cp: cp + 0x1B for cp in range(0x16EA0, 0x16EB9)})   # Beria Erfe (17.0)
    return pairs


LOWERCASE_ADDED = _lower_ranges()
DERIVED_AGE = '/usr/share/unicode/DerivedAge.txt'


def read_ages():
    ages = {}
    with open(DERIVED_AGE) as f:
        for line in f:
            line = line.split('#')[0].strip()
            if not line:
                continue
            cps, age = [x.strip() for x in line.split(';')]
            lo, _, hi = cps.partition('..')
            version = tuple(int(x) for x in age.split('.'))
            for cp in range(int(lo, 16), int(hi or lo, 16) + 1):
                ages[cp] = version
    return ages


AGES = read_ages()


def reference_category(cp):
    if cp in CATEGORY_8_0:
        return CATEGORY_8_0[cp]
    if AGES.get(cp, (99,)) > REFERENCE_CATEGORY_AGE:
        return 'Cn'
    return unicodedata.category(chr(cp))


F_WHITESPACE = 1
F_PUNCT = 2      # general category P*
F_CHINESE = 4
F_MN = 8         # general category Mn
F_CC = 16
F_CF = 32
F_CO = 64
F_CN = 128       # unassigned (and surrogates, which never reach us as UTF-8)

HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


def flags_of(cp):
    cat = reference_category(cp)
    f = 0
    if cp in WHITE_SPACE:
        f |= F_WHITESPACE
    if cat.startswith('P'):
        f |= F_PUNCT
    if any(lo <= cp <= hi for lo, hi in CJK_RANGES):
        f |= F_CHINESE
    if cat == 'Mn':
        f |= F_MN
    f |= {'Cc': F_CC, 'Cf': F_CF, 'Co': F_CO, 'Cn': F_CN, 'Cs': F_CN}.get(cat, 0)
    return f


def main():
    pool = []
    pool_index = {}

    def intern(seq):
        if not seq:
            return 0, 0
        key = tuple(seq)
        if key not in pool_index:
            pool_index[key] = len(pool)
            pool.extend(seq)
        return pool_index[key], len(seq)

    records = []
    record_index = {}
    per_cp = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            rec = (F_CN, 0, 0, 0, 0, 0)
        else:
            ch = chr(cp)
            nfd = [ord(c) for c in unicodedata.normalize('NFD', ch)]
            if nfd == [cp] or HANGUL_FIRST <= cp <= HANGUL_LAST or AGES.get(cp, (99,)) > REFERENCE_CATEGORY_AGE:
                nfd = []
            lower = [LOWERCASE_ADDED[cp]] if cp in LOWERCASE_ADDED else [ord(c) for c in ch.lower()]
            if lower == [cp]:
                lower = []
            nfd_off, nfd_len = intern(nfd)
            low_off, low_len = intern(lower)
            ccc = unicodedata.combining(ch) if AGES.get(cp, (99,)) <= REFERENCE_CATEGORY_AGE else 0
            rec = (flags_of(cp), nfd_off, nfd_len, low_off, low_len, ccc)
        if rec not in record_index:
            record_index[rec] = len(records)
            records.append(rec)
        per_cp.append(record_index[rec])

    blocks = []
    block_index = {}
    stage1 = []
    for start in range(0, 0x110000, BLOCK):
        blk = tuple(per_cp[start:start + BLOCK])
        if blk not in block_index:
            block_index[blk] = len(blocks)
            blocks.append(blk)
        stage1.append(block_index[blk])

    assert len(records) < 65536 and len(blocks) < 65536 and len(pool) < 65536
    out = sys.stdout
    out.write('// Generated by gen_unicode_tables.py from Unicode %s (python3 unicodedata) with the\n'
              '// reference\'s Unicode 8.0 categories and Unicode 17.0 lowercase. Do not edit.\n'
              % unicodedata.unidata_version)
    out.write('#include "unicode_tables.h"\n\nnamespace svc::tok {\n\n')
    out.write('const char kUnicodeVersion[] = "%s";\n\n' % unicodedata.unidata_version)

    def array(decl, values, per_line=16):
        out.write('%s = {\n' % decl)
        for i in range(0, len(values), per_line):
            out.write('    ' + ', '.join(str(v) for v in values[i:i + per_line]) + ',\n')
        out.write('};\n\n')

    array('const char32_t kMappingPool[%d]' % max(1, len(pool)), pool or [0])
    out.write('const CharRecord kRecords[%d] = {\n' % len(records))
    for f, no, nl, lo, ll, ccc in records:
        out.write('    {%d, %d, %d, %d, %d, %d},\n' % (f, nl, ll, ccc, no, lo))
    out.write('};\n\n')
    array('const uint16_t kStage1[%d]' % len(stage1), stage1)
    flat = [v for blk in blocks for v in blk]
    array('const uint16_t kStage2[%d]' % len(flat), flat, per_line=32)
    out.write('}  // namespace svc::tok\n')
    print('records=%d blocks=%d pool=%d' % (len(records), len(blocks), len(pool)), file=sys.stderr)


if __name__ == '__main__':
    main()

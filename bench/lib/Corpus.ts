/**
 * Corpus owns the message text every section uses: a deterministic set of sentences drawn Zipf-like from a fixed
 * vocabulary (about 100-character lines, 50 nicks), so the full-text index does
 * realistic work and two runs store the same bytes; and the search section's second corpus, a million distinct lines
 * drawn by Zipf's law from 200,000 words (`zipfLines`). Pure data; built once on first use.
 */

const VOCABULARY_SIZE = 3000
const SENTENCES = 5000
export const NICKS = 50

/** Park–Miller: deterministic, dependency-free. */
const random = (seed: number) => {
  let state = seed
  return () => (state = (state * 48271) % 2147483647) / 2147483647
}

const build = () => {
  const rnd = random(20_240_601)
  const letters = "abcdefghijklmnopqrstuvwxyz"
  const words = Array.from({ length: VOCABULARY_SIZE }, (_, k) => {
    const length = 2 + (k % 9)
    let w = ""
    for (let i = 0; i < length; i++) w += letters[Math.floor(rnd() * letters.length)]
    return w
  })
  // Squaring a uniform draw skews it towards the first words: a few very common, a long tail.
  return Array.from({ length: SENTENCES }, () => {
    const n = 10 + Math.floor(rnd() * 10)
    return Array.from({ length: n }, () => words[Math.floor(rnd() * rnd() * words.length)]!).join(" ")
  })
}

let sentences: ReadonlyArray<string> | undefined

export const corpus = (): ReadonlyArray<string> => (sentences ??= build())

/** The i-th message's text and sender, the same in the flood, the load and the baselines. */
export const textOf = (i: number) => corpus()[i % SENTENCES]!
export const nickOf = (i: number) => `user${i % NICKS}`

export const averageLength = () => corpus().reduce((sum, s) => sum + s.length, 0) / SENTENCES

export interface SearchCase {
  /** What kind of query it is, for the report. */
  readonly label: string
  readonly query: string
  /** Share of the corpus's messages it matches (terms ANDed, over the sentence set). */
  readonly share: number
}

/**
 * The search_messages queries of the MCP section, chosen from the corpus by how many messages they match: the most
 * frequent word, one in a hundred, one in a thousand, one in five thousand (a word of one sentence), two frequent
 * words together, a quoted phrase, and a word the corpus never uses.
 */
export const searchCases = (): ReadonlyArray<SearchCase> => {
  const sentences = corpus()
  const wordsOf = sentences.map((s) => new Set(s.split(" ")))
  const df = new Map<string, number>()
  for (const words of wordsOf) for (const w of words) df.set(w, (df.get(w) ?? 0) + 1)
  const byFrequency = [...df.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
  const closest = (share: number) =>
    byFrequency.reduce((best, e) => (Math.abs(e[1] / SENTENCES - share) < Math.abs(best[1] / SENTENCES - share) ? e : best))
  const share = (test: (words: ReadonlySet<string>, text: string) => boolean) =>
    sentences.filter((s, i) => test(wordsOf[i]!, s)).length / SENTENCES
  const [first, second] = [byFrequency[0]![0], byFrequency[1]![0]]
  const firstSentence = sentences[0]!.split(" ")
  const phrase = `${firstSentence[1]} ${firstSentence[2]}`
  const word = (label: string, w: string): SearchCase => ({ label, query: w, share: df.get(w)! / SENTENCES })
  return [
    word("most frequent word", first),
    word("word in 1 message of 100", closest(0.01)[0]),
    word("word in 1 message of 1,000", closest(0.001)[0]),
    word("word of one sentence (1 of 5,000)", closest(1 / SENTENCES)[0]),
    { label: "two frequent words", query: `${first} ${second}`, share: share((w) => w.has(first) && w.has(second)) },
    { label: "quoted phrase", query: `"${phrase}"`, share: share((_, s) => ` ${s} `.includes(` ${phrase} `)) },
    { label: "word in no message", query: "qqqqqqqqqqqq", share: 0 }
  ]
}

/**
 * The bench corpus's nick-filter case for the search section: the most frequent word said by one of the 50 nicks.
 * Message i (1-based) has sentence i % SENTENCES and nick i % NICKS, and SENTENCES is a multiple of NICKS, so the
 * nick's messages are the sentences of its residue.
 */
export const nickCase = (nick = 7): SearchCase & { readonly nick: string } => {
  const sentences = corpus()
  const [first] = searchCases()
  const said = sentences.filter((s, i) => i % NICKS === nick && s.split(" ").includes(first!.query)).length
  return {
    label: `most frequent word, nick filter (user${nick}, 1 nick of ${NICKS})`,
    query: first!.query,
    nick: `user${nick}`,
    share: said / SENTENCES
  }
}

/**
 * The search section's second corpus, for a vocabulary nothing like the first: ZIPF_VOCABULARY words, each line
 * ZIPF_WORDS_PER_LINE of them drawn independently by Zipf's law (rank k with probability 1/(k·H), H the harmonic
 * number of the vocabulary), every line its own (no repetition). A word of rank k is then in about one line of k, the
 * most frequent in most lines, and most of the vocabulary in a handful of lines or none: the shape of real chat,
 * where the planner's most-common-elements list covers a far smaller share of the words than with 3,000.
 * Deterministic: the same lines on every run, drawn in order from one seeded generator.
 */
export const ZIPF_VOCABULARY = 200_000
export const ZIPF_WORDS_PER_LINE = 12

/** The word of rank k (1-based): four letters that no other rank has (k·7919 mod 26⁴ is a bijection), then 0–4 more. */
export const zipfWord = (rank: number) => {
  const letters = "abcdefghijklmnopqrstuvwxyz"
  let code = ((rank - 1) * 7919) % 456_976
  let word = ""
  for (let i = 0; i < 4; i++) {
    word += letters[code % 26]
    code = Math.floor(code / 26)
  }
  return word + "aeiou".slice(0, rank % 5)
}

let zipfCdf: Float64Array | undefined

/** The ranks of lines 0, 1, 2, … in order (each line ZIPF_WORDS_PER_LINE ranks). */
export function* zipfLines(count: number): Generator<ReadonlyArray<number>> {
  const cdf = (zipfCdf ??= (() => {
    const c = new Float64Array(ZIPF_VOCABULARY + 1)
    for (let k = 1; k <= ZIPF_VOCABULARY; k++) c[k] = c[k - 1]! + 1 / k
    for (let k = 1; k <= ZIPF_VOCABULARY; k++) c[k] = c[k]! / c[ZIPF_VOCABULARY]!
    return c
  })())
  const rnd = random(19_700_101)
  for (let line = 0; line < count; line++) {
    const ranks: Array<number> = []
    for (let w = 0; w < ZIPF_WORDS_PER_LINE; w++) {
      const u = rnd()
      let lo = 1
      let hi = ZIPF_VOCABULARY
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (cdf[mid]! >= u) hi = mid
        else lo = mid + 1
      }
      ranks.push(lo)
    }
    yield ranks
  }
}

export const zipfText = (ranks: ReadonlyArray<number>) => ranks.map(zipfWord).join(" ")

/**
 * The search section's cases on the Zipf corpus of `count` lines (line i, 0-based, is message i + 1 with nick
 * `user((i + 1) % NICKS)`), chosen as `searchCases` chooses them on the bench corpus, from one pass over the lines:
 * the most frequent word, words in about one line of 100, 1,000 and 5,000, the two most frequent words together, the
 * first line's second and third words as a quoted phrase, a word in no line, and the most frequent word by one nick.
 */
export const zipfCases = (count: number, nick = 7): ReadonlyArray<SearchCase & { readonly nick?: string }> => {
  const df = new Int32Array(ZIPF_VOCABULARY + 1)
  let both = 0
  let phraseLines = 0
  let byNick = 0
  let phrase: readonly [number, number] | undefined
  let i = 0
  for (const ranks of zipfLines(count)) {
    phrase ??= [ranks[1]!, ranks[2]!]
    const distinct = new Set(ranks)
    for (const r of distinct) df[r]!++
    if (distinct.has(1) && distinct.has(2)) both++
    if (distinct.has(1) && (i + 1) % NICKS === nick) byNick++
    if (ranks.some((r, k) => r === phrase![0] && ranks[k + 1] === phrase![1])) phraseLines++
    i++
  }
  const closest = (share: number) => {
    let best = 1
    for (let r = 1; r <= ZIPF_VOCABULARY; r++) {
      if (Math.abs(df[r]! / count - share) < Math.abs(df[best]! / count - share)) best = r
    }
    return best
  }
  const word = (label: string, rank: number): SearchCase => ({ label, query: zipfWord(rank), share: df[rank]! / count })
  return [
    word("most frequent word", 1),
    word("word in 1 message of 100", closest(0.01)),
    word("word in 1 message of 1,000", closest(0.001)),
    word("word in 1 message of 5,000", closest(1 / 5000)),
    { label: "two frequent words", query: `${zipfWord(1)} ${zipfWord(2)}`, share: both / count },
    { label: "quoted phrase", query: `"${zipfWord(phrase![0])} ${zipfWord(phrase![1])}"`, share: phraseLines / count },
    { label: "word in no message", query: "qqqqqqqqqqqq", share: 0 },
    {
      label: `most frequent word, nick filter (user${nick}, 1 nick of ${NICKS})`,
      query: zipfWord(1),
      nick: `user${nick}`,
      share: byNick / count
    }
  ]
}

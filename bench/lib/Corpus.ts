/**
 * Corpus owns the message text every section uses: a deterministic set of sentences drawn Zipf-like from a fixed
 * vocabulary (about 100-character lines, 50 nicks), so the full-text index does
 * realistic work and two runs store the same bytes. Pure data; built once on first use.
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

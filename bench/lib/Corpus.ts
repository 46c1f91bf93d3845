/**
 * Corpus owns the message text every section uses: a deterministic set of sentences drawn Zipf-like from a fixed
 * vocabulary (research/stack.md §4 used ~93-character lines from a 5000-word vocabulary), so the full-text index does
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

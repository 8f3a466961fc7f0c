#!/usr/bin/env node
// Generates brain.db files in the production schema (/work/main/brain-schema.sql, WAL) with realistic,
// varied rows, cached under bench/data/ (gitignored) and reused by later runs.
//
//   node bench/gen-brain.mjs 1k 100k 1m     # or plain numbers; prints the path and timing of each
//   node bench/gen-brain.mjs --polluted 0.6 100k   # the same rows, 60 % of the conversation rows
//                                                  # stored as the old turn logger did (issue 18)
//
// As a module: `ensureBrain(rows, { polluted })` returns the path of the cached file, generating it
// first (in a child process: better-sqlite3 must never share a process with the addon, see
// __test__/helpers/sqlite-child.cjs) when it is missing. Files are deterministic (seeded PRNG).
//
// Polluted rows (issue 18): before it cleaned prompts, the turn log stored `user: ` + the first 500
// codepoints of the prompt as Dotty's voice provider sends it, the person's words followed by its
// scaffolding (`build_turn_suffix`, copied exactly in __test__/fixtures/voice-turn-suffix.json, a
// VOICE TOOL ROUTING paragraph, a MEMORY SEARCH RESULTS block). With `polluted` = p, each
// conversation row is polluted with probability p, decided by a PRNG of its own: every other row, and
// the words of every row, are the same as in the clean file of that size. About one polluted row in
// ten has words long enough that the 500-codepoint cut falls inside the marker
// (`…\n\n---\nHARD CONSTRAIN`), which only `clean-turns` repairs (the read side finds no marker).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, '..');
export const dataDir = path.join(here, 'data');
const GEN_VERSION = 3; // bump when the text model changes: old cached files are then regenerated

export const label = (n) => (n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}m` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3}k` : String(n));
export const parseRows = (s) => {
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(String(s));
  if (!m) throw new Error(`bad row count ${s}`);
  return Math.round(Number(m[1]) * ({ k: 1e3, m: 1e6 }[m[2].toLowerCase()] ?? 1));
};
/** `polluted` as the file name carries it: 0.6 → `p60` (none for a clean file). */
const pollutedTag = (p) => (p ? `.p${Math.round(p * 100)}` : '');
export const brainPath = (n, { polluted = 0 } = {}) => path.join(dataDir, `brain-${label(n)}${pollutedTag(polluted)}.v${GEN_VERSION}.db`);

/** The path of a cached brain.db with `n` rows, generated (in a child process) when missing. */
export function ensureBrain(n, { polluted = 0 } = {}) {
  const file = brainPath(n, { polluted });
  if (!fs.existsSync(file)) {
    const args = [fileURLToPath(import.meta.url), ...(polluted ? ['--polluted', String(polluted)] : []), String(n)];
    execFileSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return file;
}

// ---------------------------------------------------------------------------------------------
// The text model: a household robot's memories. Vocabulary lists + sentence templates, with a
// skewed (Zipf-like) choice so some words are common and most are rare, as in real text.

const NAMES = ['Ada', 'Ben', 'Chloé', 'Dev', 'Ella', 'Finn', 'Grace', 'Hugo', 'Isla', 'Jack', 'Kai', 'Lena', 'Milo', 'Nora', 'Omar', 'Priya', 'Quinn', 'Rosa', 'Sami', 'Theo', 'Uma', 'Vik', 'Wren', 'Xavi', 'Yara', 'Zoë', 'Amara', 'Bodhi', 'Cleo', 'Dara', 'Eli', 'Freya', 'Gus', 'Hana', 'Iris', 'Jonah', 'Kira', 'Leo', 'Maya', 'Niko', 'Olive', 'Pablo', 'Ruby', 'Sasha', 'Tomás', 'Ines', 'Arlo', 'Bea', 'Cyrus', 'Daisy', 'Ezra', 'Fatima', 'Georgia', 'Henrik', 'Ivo', 'Juno', 'Kofi', 'Luca', 'Mei', 'Nadia', 'Oscar', 'Petra', 'Rafael', 'Sofia', 'Tariq', 'Ulla', 'Vera', 'Willa', 'Yusuf', 'Zara', 'Grandma Rosa', 'Grandpa Joe', 'Auntie Mei', 'Uncle Dev', 'Mum', 'Dad', 'Mrs Patel', 'Mr Okafor', 'Coach Lee', 'Dr Amin'];
const FOODS = ['pancakes', 'spaghetti', 'chocolate ice cream', 'strawberries', 'sushi', 'tomato soup', 'cheese sandwiches', 'mango', 'porridge', 'fish fingers', 'dumplings', 'apple pie', 'broccoli', 'pizza with olives', 'banana bread', 'noodles', 'carrot cake', 'peanut butter toast', 'lentil curry', 'blueberry muffins', 'watermelon', 'jollof rice', 'croissants', 'falafel', 'mac and cheese', 'popcorn', 'crêpes', 'grapes', 'tacos', 'vanilla yoghurt'];
const ANIMALS = ['dinosaurs', 'octopuses', 'foxes', 'penguins', 'hedgehogs', 'sharks', 'owls', 'elephants', 'bees', 'axolotls', 'tigers', 'dolphins', 'snails', 'giraffes', 'wolves', 'frogs', 'horses', 'pandas', 'ladybirds', 'whales', 'koalas', 'bats', 'squirrels', 'crocodiles'];
const PLACES = ['the park', 'school', 'the library', 'the beach', 'the swimming pool', "grandma's house", 'the museum', 'the zoo', 'the supermarket', 'the garden', 'the forest', 'football practice', 'the dentist', 'the playground', 'the science centre', 'the bakery', 'the farm', 'the train station', 'the cinema', 'ballet class', 'the allotment', 'the lake'];
const ACTIVITIES = ['built a Lego castle', 'painted a rainbow', 'played hide and seek', 'read a book about space', 'practised the piano', 'rode a scooter', 'baked cookies', 'did a jigsaw puzzle', 'planted sunflowers', 'watched a film about robots', 'made a paper aeroplane', 'learned a new song', 'drew a map of the house', 'played chess', 'danced in the kitchen', 'counted to a hundred', 'wrote a poem', 'fed the ducks', 'built a blanket fort', 'tried to juggle', 'sorted the recycling', 'played the drums'];
const COLOURS = ['red', 'blue', 'green', 'purple', 'yellow', 'orange', 'pink', 'teal', 'silver', 'gold', 'turquoise', 'lilac'];
const FEELINGS = ['happy', 'tired', 'excited', 'a bit grumpy', 'proud', 'sleepy', 'curious', 'silly', 'nervous', 'calm', 'giggly'];
const PETS = ['Biscuit', 'Pepper', 'Mochi', 'Sir Wiggles', 'Luna', 'Pickle', 'Noodle', 'Captain Fluff'];
const ALLERGENS = ['peanuts', 'cats', 'pollen', 'strawberries', 'dust', 'sesame', 'eggs'];
const JOBS = ['astronaut', 'vet', 'firefighter', 'marine biologist', 'chef', 'pilot', 'inventor', 'footballer', 'doctor', 'palaeontologist', 'teacher', 'robot engineer'];
const TOPICS = ['the moon', 'volcanoes', 'rainbows', 'the pyramids', 'black holes', 'the ocean', 'thunderstorms', 'the human heart', 'electricity', 'the Romans', 'magnets', 'clouds', 'the Amazon rainforest', 'Saturn', 'earthquakes', 'bread', 'bicycles', 'whales singing'];
const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const ROOMS = ['kitchen', 'living room', 'hallway', 'bedroom', 'garden', 'playroom'];
const FILLER = ['Dotty said', 'I think', 'apparently', 'by the way', 'after dinner', 'this morning', 'on the way home', 'before bed', 'at breakfast', 'in the afternoon', 'last weekend', 'yesterday'];

function mulberry32(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function textModel(rand) {
  // Zipf-ish: index = floor(len * r^2.2) favours the head of each list.
  const z = (list) => list[Math.floor(list.length * rand() ** 2.2)];
  const u = (list) => list[Math.floor(list.length * rand())];
  const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const core = [
    () => `${z(NAMES)} likes ${z(FOODS)} and hates ${u(FOODS)}.`,
    () => `${z(NAMES)}'s favourite colour is ${z(COLOURS)}.`,
    () => `${z(NAMES)} is ${int(3, 11)} years old and loves ${z(ANIMALS)}.`,
    () => `The family dog is called ${u(PETS)}; ${z(NAMES)} walks it to ${z(PLACES)}.`,
    () => `${z(NAMES)} is allergic to ${z(ALLERGENS)}, so no ${u(FOODS)} for them.`,
    () => `${z(NAMES)} wants to be a ${z(JOBS)} when they grow up.`,
    () => `${z(NAMES)}'s birthday is on the ${int(1, 28)}th of ${['January', 'March', 'May', 'July', 'September', 'November'][int(0, 5)]}; they want a ${z(COLOURS)} bike.`,
    () => `${z(NAMES)} is scared of ${z(ANIMALS)} but brave about ${u(PLACES)}.`,
    () => `Remember: ${z(NAMES)} goes to ${z(PLACES)} every ${u(WEEKDAYS)}.`,
  ];
  const question = [
    () => `why do ${z(ANIMALS)} ${u(['sleep so much', 'live where they do', 'have that colour', 'make that noise'])}?`,
    () => `can you tell me a story about ${z(ANIMALS)} and ${u(TOPICS)}`,
    () => `how far away is ${z(TOPICS)}`,
    () => `what should I have for dinner, maybe ${z(FOODS)}?`,
    () => `play a song about ${z(ANIMALS)}`,
    () => `what did I do at ${z(PLACES)} last time`,
    () => `do you remember what ${z(NAMES)} likes`,
  ];
  const answer = [
    () => `Great question! ${cap(z(TOPICS))} is fascinating: ${u(FILLER)}, scientists think it has to do with ${u(TOPICS)}. Want to hear more about ${u(ANIMALS)}?`,
    () => `Once upon a time, a family of ${z(ANIMALS)} lived near ${z(PLACES)}. Every ${u(WEEKDAYS)} they ${z(ACTIVITIES)} and felt ${u(FEELINGS)}. The end!`,
    () => `I remember that ${z(NAMES)} likes ${z(FOODS)}. How about that tonight?`,
    () => `Hmm, ${u(FILLER)}, you ${z(ACTIVITIES)} at ${z(PLACES)}. That sounded ${u(FEELINGS).replace('a bit ', '')}!`,
    () => `Sure! Here's a song about ${z(ANIMALS)}: la la la, ${u(COLOURS)} ${u(ANIMALS)} dancing all day long 🎵`,
  ];
  const daily = [
    () => `${u(WEEKDAYS)}: ${z(NAMES)} ${z(ACTIVITIES)} at ${z(PLACES)} and was ${u(FEELINGS)}.`,
    () => `Saw ${z(NAMES)} in the ${u(ROOMS)} around ${int(6, 20)}:${String(int(0, 59)).padStart(2, '0')}; they ${z(ACTIVITIES)}.`,
    () => `${z(NAMES)} and ${z(NAMES)} ${z(ACTIVITIES)} ${u(FILLER)}. Lots of laughing.`,
    () => `Camera: ${int(1, 4)} people in the ${u(ROOMS)}, ${z(NAMES)} wearing ${z(COLOURS)}, a plate of ${u(FOODS)} on the table.`,
  ];
  const cap = (s) => s[0].toUpperCase() + s.slice(1);
  return {
    core: () => u(core)(),
    /** A turn's two halves (the same PRNG draws, in the same order, as `conversation`). */
    turn: () => {
      let a = u(answer)();
      if (rand() < 0.3) a += ' ' + u(answer)(); // some long turns: > 200 codepoints, exercising the ellipsis
      return { q: u(question)(), a };
    },
    daily: () => u(daily)(),
    person: () => z(NAMES).toLowerCase().replace(/ /g, '_'),
  };
}

// ---------------------------------------------------------------------------------------------
// Issue 18: the voice provider's scaffolding, and the old logger's way of storing it.
const SUFFIX = JSON.parse(fs.readFileSync(path.join(root, '__test__/fixtures/voice-turn-suffix.json'), 'utf8'));
/** build_turn_suffix(kid_mode) of the provider's custom-providers/textUtils.py. */
export const turnSuffix = (kid) => SUFFIX.base + (kid ? SUFFIX.kid_mode_lines : '') + SUFFIX.end;
/** The provider's tool-routing paragraph (before the suffix). */
export const VOICE_TOOL_ROUTING =
  '\n\nVOICE TOOL ROUTING: Decide whether to use a registered tool before composing the spoken reply. Use the matching tool when the user asks you to remember or recall, play a song, look or take a photo, or solve a question that needs careful reasoning. Call it first and use its result. Never claim an action succeeded unless its tool succeeded. The reply constraints below apply only to final spoken text, not to tool calls.';
const takeCp = (s, n) => [...s].slice(0, n).join('');
const cpLen = (s) => [...s].length;
const HARD_MARKER = '\n\n---\nHARD CONSTRAINTS for THIS reply';

/**
 * The user half as the old turn log stored it: the first 500 codepoints of the prompt the provider
 * sent (words + scaffolding). `rand` is the pollution PRNG; `earlier` an earlier fact, for a
 * MEMORY SEARCH RESULTS block.
 */
function oldUserHalf(words, rand, earlier) {
  const r = rand();
  let prompt;
  if (r < 0.35) prompt = words + turnSuffix(false);
  else if (r < 0.55) prompt = words + turnSuffix(true);
  else if (r < 0.8) prompt = words + VOICE_TOOL_ROUTING + turnSuffix(rand() < 0.4);
  else if (r < 0.9) prompt = `${words}\n\nMEMORY SEARCH RESULTS (from earlier conversations):\n- ${earlier}${VOICE_TOOL_ROUTING}${turnSuffix(false)}`;
  else {
    // Long words, so that the cut falls inside the marker: 1 to 35 of its 36 codepoints kept.
    const keep = 1 + Math.floor(rand() * (cpLen(HARD_MARKER) - 1));
    // A child rambling on: varied clauses (not the question again, which would skew the ranking).
    const pick = (list) => list[Math.floor(list.length * rand())];
    let long = words;
    while (cpLen(long) < 500) long += `, and ${pick(FILLER)} we ${pick(ACTIVITIES)} at ${pick(PLACES)}`;
    long = takeCp(long, 500 - keep);
    prompt = long + turnSuffix(false);
  }
  return takeCp(prompt.trim(), 500);
}

/** The lookup queries, a realistic voice mix: names, foods, phrases, broad and rare words, and misses. */
export const QUERIES = [
  'chocolate ice cream', 'Grandma Rosa', 'dinosaurs', 'favourite colour', 'allergic to peanuts', 'birthday',
  'marine biologist', 'Zoë', 'blanket fort', 'swimming pool', 'Captain Fluff', 'black holes', 'jollof rice',
  'axolotls', 'purple giraffe', 'what did I do yesterday', 'Mrs Patel', 'quantum chromodynamics', 'piano', 'the moon',
];

function generate(n, file, { polluted = 0 } = {}) {
  const require = createRequire(import.meta.url);
  const Database = require(path.join(root, 'node_modules/better-sqlite3'));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  for (const s of ['', '-wal', '-shm']) fs.rmSync(tmp + s, { force: true });
  const db = new Database(tmp);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -65536');
  db.exec(fs.readFileSync(path.join(root, 'brain-schema.sql'), 'utf8'));
  const st = db.prepare(`INSERT INTO memories (id, key, content, category, embedding, created_at, updated_at, session_id, namespace, importance, superseded_by)
    VALUES (?, ?, ?, ?, NULL, ?, ?, NULL, ?, ?, NULL)`);
  const rand = mulberry32(0xb7a1 ^ n);
  const text = textModel(rand);
  // The pollution draws come from a PRNG of their own, so that every row's words stay those of the
  // clean file (same seed, same draws), and only the chosen rows' user halves change.
  const prand = mulberry32(0x18 ^ n);
  // What a MEMORY SEARCH RESULTS block quotes: the last fact or daily note generated. (Not an earlier
  // conversation row: its ` | assistant: ` would become the row's first one, and the contract's
  // cleaning splits there; see bench/README.md, issue 18.)
  let earlier = 'Dotty is a small robot.';
  const t0Ms = Date.UTC(2024, 5, 1);
  const spanMs = 700 * 86_400_000;
  const hex = (i) => ((rand() * 0x100000000) >>> 0).toString(16).padStart(8, '0') + i.toString(16).padStart(8, '0');
  // Bulk load: the FTS insert trigger is dropped during the load and the index rebuilt in one pass
  // (4x faster than a trigger per row), then the trigger is re-created from its own stored SQL, so the
  // file ends with the exact production schema (only its sqlite_master row order differs).
  const triggerSql = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'memories_ai'").pluck().get();
  db.exec('DROP TRIGGER memories_ai');
  const BATCH = 20_000;
  const batch = db.transaction((from, to) => {
    for (let i = from; i < to; i++) {
      const r = rand();
      const category = r < 0.45 ? 'conversation' : r < 0.75 ? 'daily' : 'core';
      let namespace, content, importance;
      if (category === 'conversation') {
        namespace = 'voice'; importance = 0.3;
        const { q, a } = text.turn();
        const clean = `user: ${q} | assistant: ${a}`;
        // Stored as the store step does: the whole row stripped once.
        content = polluted && prand() < polluted ? `user: ${oldUserHalf(q, prand, earlier)} | assistant: ${a}`.trim() : clean;
      }
      else if (category === 'daily') { namespace = rand() < 0.9 ? 'default' : 'voice'; content = text.daily(); importance = 0.5; }
      else {
        const p = rand();
        namespace = p < 0.55 ? 'voice' : p < 0.8 ? `person:${text.person()}` : p < 0.9 ? `person_pending:${text.person()}` : 'default';
        content = text.core(); importance = [0.5, 0.7, 0.7, 0.9][Math.floor(rand() * 4)];
      }
      if (category !== 'conversation') earlier = content;
      const ts = new Date(t0Ms + Math.floor((i / n) * spanMs) + Math.floor(rand() * 60_000)).toISOString();
      const h = hex(i);
      const id = `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${(rand() * 0x1000 >>> 0).toString(16).padStart(3, '0')}-${h.slice(4, 16)}`;
      const key = namespace === 'voice' ? `voice_${category}_${ts}_${id.slice(0, 8)}` : `${category}_${i}`;
      st.run(id, key, content, category, ts, ts, namespace, importance);
    }
  });
  for (let i = 0; i < n; i += BATCH) batch(i, Math.min(n, i + BATCH));
  db.exec("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')");
  db.exec(triggerSql);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  for (const s of ['-wal', '-shm']) fs.rmSync(tmp + s, { force: true });
  fs.renameSync(tmp, file);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const args = process.argv.slice(2);
  const pi = args.indexOf('--polluted');
  const polluted = pi >= 0 ? Number(args.splice(pi, 2)[1]) : 0;
  if (!(polluted >= 0 && polluted <= 1)) { console.error('--polluted takes a share between 0 and 1'); process.exit(2); }
  const sizes = args.map(parseRows);
  if (!sizes.length) { console.error('usage: node bench/gen-brain.mjs [--polluted 0.6] 1k 100k 1m'); process.exit(2); }
  for (const n of sizes) {
    const file = brainPath(n, { polluted });
    if (fs.existsSync(file)) { console.error(`cached ${file}`); continue; }
    const t0 = performance.now();
    generate(n, file, { polluted });
    console.error(`generated ${file}: ${n} rows, ${(fs.statSync(file).size / 2 ** 20).toFixed(1)} MiB in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
}

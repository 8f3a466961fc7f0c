// What Dotty's voice model reads about each tool is production's text, byte for byte
// (docs/voice-tools.md, "What the model reads"): every field the package registers, through the real
// entry (index.js) into a fake pi, against production's strings kept as the contract's data
// (__test__/fixtures/production-descriptors.json, each tool with its source file and commit).
import { beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { root, tempDir, makeBrain } from './helpers/brain.mjs';
import { loadExtension } from './helpers/fake-pi.mjs';

const PRODUCTION = JSON.parse(fs.readFileSync(path.join(root, '__test__/fixtures/production-descriptors.json'), 'utf8'));
/** The fields the model (and pi's prompt) reads, as production's `*Tool` objects carry them. */
const FIELDS = ['name', 'label', 'description', 'promptSnippet', 'promptGuidelines', 'parameters'];
/** A field as bytes: JSON, key order included (pi sends `parameters` to the model as JSON). */
const bytes = (v) => JSON.stringify(v);

let registered;
beforeAll(() => {
  const dir = tempDir('dotty-descriptors-');
  Object.assign(process.env, { DOTTY_BRAIN_DB: makeBrain(path.join(dir, 'brain.db')), MEMPALACE_BRIDGE: '0' });
  registered = [...loadExtension().tools.values()];
});

describe("the voice tools' descriptors", () => {
  it("are registered in production's order", () => {
    expect(PRODUCTION.tools.map((t) => t.name)).toEqual(['memory_lookup', 'recall_person', 'remember', 'remember_person', 'think_hard', 'play_song', 'take_photo']);
    expect(registered.map((t) => t.name)).toEqual(PRODUCTION.tools.map((t) => t.name));
  });

  it("carry production's label, description, promptSnippet, promptGuidelines and parameters, byte for byte", () => {
    const differences = [];
    for (const want of PRODUCTION.tools) {
      const got = registered.find((t) => t.name === want.name) ?? {};
      for (const f of FIELDS) {
        if (bytes(got[f]) !== bytes(want[f])) differences.push(`${want.name}.${f}: ${bytes(got[f])}, production ${bytes(want[f])} (${want.source.path} at ${want.source.commit.slice(0, 7)})`);
      }
    }
    expect(differences).toEqual([]);
  });

  it('give the model nothing production does not: no other field is set but execute', () => {
    for (const t of registered) {
      const set = Object.keys(t).filter((k) => t[k] !== undefined && t[k] !== null).sort();
      expect(set, t.name).toEqual([...FIELDS, 'execute'].sort());
    }
  });

  it("every parameter is production's: names, types, descriptions, required", () => {
    for (const want of PRODUCTION.tools) {
      const got = registered.find((t) => t.name === want.name).parameters;
      expect(Object.keys(got.properties)).toEqual(Object.keys(want.parameters.properties));
      for (const [name, p] of Object.entries(want.parameters.properties)) {
        expect(got.properties[name], `${want.name}(${name})`).toEqual(p);
      }
      expect(got.required, want.name).toEqual(want.parameters.required);
    }
  });
});

describe('production\'s direct-call modules (src/tools/*.ts)', () => {
  // Production's modules also export the `*Tool` objects its index.ts registers; the package's entry
  // is index.js, so these modules carry none: what the model reads has one source (src/voice/descriptors.rs).
  it('export only the run* function the voice client imports, no descriptor that could drift', () => {
    for (const t of PRODUCTION.tools) {
      const file = path.join(root, 'src/tools', `${t.name}.ts`);
      const exported = [...fs.readFileSync(file, 'utf8').matchAll(/^export\s+(?:async\s+)?(?:function|const|let|var|class)\s+(\w+)/gm)].map((m) => m[1]);
      expect(exported.filter((n) => !n.startsWith('run')), file).toEqual([]);
      expect(exported.length, file).toBe(1);
    }
  });
});

// Instant fakes of dotty-behaviour (take_photo) and llama-swap (chat completions) in a process of
// their own, so that serving them never shares the measured process's JS thread. Built on the test
// suite's fake-service helper. Prints one line `{"url": ...}` on stdout once listening.
import { startService, json } from '../../__test__/helpers/services.mjs';

const photo = { description: 'A child in a red jumper is building a tall Lego tower on the living room floor.' };
const answer = { choices: [{ index: 0, message: { role: 'assistant', content: ' The Moon is about 384,400 km from Earth on average. ' }, finish_reason: 'stop' }] };
const svc = await startService({
  'GET /api/voice/take_photo': (req, res) => json(res, 200, photo),
  'POST /v1/chat/completions': (req, res) => json(res, 200, answer),
});
svc.requests.length = 0;
// Don't keep a log of every request: the benchmark sends many.
svc.requests.push = () => 0;
process.stdout.write(JSON.stringify({ url: svc.url }) + '\n');
process.stdin.resume();
process.stdin.on('end', () => svc.close().then(() => process.exit(0)));

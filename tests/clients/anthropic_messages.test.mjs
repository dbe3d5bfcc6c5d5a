// The official Anthropic SDK against the gateway's /v1/messages, answered by
// the demo's simulated upstreams: same format (sim-anthropic) and across
// formats (sim-openai).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { malformedJsonFetch, SDK_TIMEOUT_MS, startGateway, TEST_TIMEOUT_MS } from './gateway.mjs';

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a place',
  input_schema: {
    type: 'object',
    properties: { location: { type: 'string' } },
    required: ['location'],
  },
};

let gateway;
let client;

before(async () => {
  gateway = await startGateway();
  client = new Anthropic({ baseURL: gateway.baseUrl, apiKey: 'demo-key', maxRetries: 0, timeout: SDK_TIMEOUT_MS });
});

after(async () => {
  await gateway?.stop();
});

const textOf = (message) =>
  message.content
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('');

for (const model of ['sim-anthropic/claude-sim', 'sim-openai/gpt-sim']) {
  describe(`messages via ${model}`, { timeout: TEST_TIMEOUT_MS }, () => {
    it('answers a non-streaming request', async () => {
      const message = await client.messages.create({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'ping' }],
      });
      assert.equal(message.type, 'message');
      assert.equal(message.role, 'assistant');
      assert.match(textOf(message), /You said: ping/);
      assert.equal(message.stop_reason, 'end_turn');
      assert.ok(message.usage.input_tokens > 0, 'input_tokens > 0');
      assert.ok(message.usage.output_tokens > 0, 'output_tokens > 0');
    });

    it('streams text and usage', async () => {
      const stream = client.messages.stream({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'ping' }],
      });
      let text = '';
      let deltas = 0;
      stream.on('text', (delta) => {
        deltas += 1;
        text += delta;
      });
      const message = await stream.finalMessage();
      assert.ok(deltas > 0, 'text deltas arrived');
      assert.match(text, /You said: ping/);
      assert.equal(textOf(message), text);
      assert.equal(message.stop_reason, 'end_turn');
      assert.ok(message.usage.input_tokens > 0, 'input_tokens > 0');
      assert.ok(message.usage.output_tokens > 0, 'output_tokens > 0');
    });

    it('round-trips a tool_use block', async () => {
      const messages = [{ role: 'user', content: 'use the tool' }];
      const first = await client.messages.create({ model, max_tokens: 256, messages, tools: [weatherTool] });
      assert.equal(first.stop_reason, 'tool_use');
      const toolUse = first.content.find((block) => block.type === 'tool_use');
      assert.ok(toolUse, 'a tool_use block');
      assert.equal(toolUse.name, 'get_weather');
      assert.equal(toolUse.input.location, 'demo');
      assert.ok(toolUse.id, 'the tool_use block has an id');

      messages.push(
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'sunny, 21 C' }] },
      );
      const second = await client.messages.create({ model, max_tokens: 256, messages, tools: [weatherTool] });
      assert.match(textOf(second), /Tool result received/);
    });

    it('streams a tool_use block', async () => {
      const stream = client.messages.stream({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'use the tool' }],
        tools: [weatherTool],
      });
      const message = await stream.finalMessage();
      assert.equal(message.stop_reason, 'tool_use');
      const toolUse = message.content.find((block) => block.type === 'tool_use');
      assert.ok(toolUse, 'a tool_use block');
      assert.equal(toolUse.name, 'get_weather');
      assert.deepEqual(toolUse.input, { location: 'demo' });
    });
  });
}

// A PDF document block without a title: a Chat upstream gets it as a file part named after its type.
describe('a PDF document', { timeout: TEST_TIMEOUT_MS }, () => {
  const pdf = Buffer.from('%PDF-1.4\n1 0 obj\n<</Type/Catalog>>\nendobj\n').toString('base64');
  for (const [model, name] of [
    ['sim-anthropic/claude-sim', 'untitled'],
    ['sim-openai/gpt-sim', 'document.pdf'],
  ]) {
    it(`reaches ${model}`, async () => {
      const message = await client.messages.create({
        model,
        max_tokens: 256,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
              { type: 'text', text: 'what is in it?' },
            ],
          },
        ],
      });
      const text = message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
      assert.ok(text.includes(`[files: ${name} (application/pdf)]`), text);
    });
  }
});

describe('malformed JSON', { timeout: TEST_TIMEOUT_MS }, () => {
  const broken = () =>
    new Anthropic({
      baseURL: gateway.baseUrl,
      apiKey: 'demo-key',
      maxRetries: 0,
      timeout: SDK_TIMEOUT_MS,
      fetch: malformedJsonFetch,
    });

  it('/v1/messages answers 400 BadRequestError', async () => {
    await assert.rejects(
      broken().messages.create({ model: 'demo', max_tokens: 16, messages: [{ role: 'user', content: 'ping' }] }),
      (error) => error instanceof Anthropic.BadRequestError && error.status === 400,
    );
  });

  it('/v1/messages/count_tokens answers 400 BadRequestError', async () => {
    await assert.rejects(
      broken().messages.countTokens({ model: 'demo', messages: [{ role: 'user', content: 'ping' }] }),
      (error) => error instanceof Anthropic.BadRequestError && error.status === 400,
    );
  });
});

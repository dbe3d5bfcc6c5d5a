// The official OpenAI SDK against the gateway's /v1/chat/completions, answered
// by the demo's simulated upstreams: same format (sim-openai) and across
// formats (sim-anthropic).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { malformedJsonFetch, SDK_TIMEOUT_MS, startGateway, TEST_TIMEOUT_MS } from './gateway.mjs';

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a place',
    parameters: {
      type: 'object',
      properties: { location: { type: 'string' } },
      required: ['location'],
    },
  },
};

let gateway;
let client;

before(async () => {
  gateway = await startGateway();
  client = new OpenAI({
    baseURL: `${gateway.baseUrl}/v1`,
    apiKey: 'demo-key',
    maxRetries: 0,
    timeout: SDK_TIMEOUT_MS,
  });
});

after(async () => {
  await gateway?.stop();
});

for (const model of ['sim-openai/gpt-sim', 'sim-anthropic/claude-sim']) {
  describe(`chat.completions via ${model}`, { timeout: TEST_TIMEOUT_MS }, () => {
    it('answers a non-streaming request', async () => {
      const completion = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'ping' }],
      });
      const message = completion.choices[0].message;
      assert.equal(message.role, 'assistant');
      assert.match(message.content, /You said: ping/);
      assert.equal(completion.choices[0].finish_reason, 'stop');
      assert.ok(completion.usage.prompt_tokens > 0, 'prompt_tokens > 0');
      assert.ok(completion.usage.completion_tokens > 0, 'completion_tokens > 0');
    });

    it('streams text and usage with stream_options.include_usage', async () => {
      const stream = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'ping' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let usage;
      let finishReason;
      let chunks = 0;
      for await (const chunk of stream) {
        chunks += 1;
        if (chunk.usage) usage = chunk.usage;
        for (const choice of chunk.choices) {
          text += choice.delta?.content ?? '';
          finishReason = choice.finish_reason ?? finishReason;
        }
      }
      assert.ok(chunks > 1, 'more than one chunk');
      assert.match(text, /You said: ping/);
      assert.equal(finishReason, 'stop');
      assert.ok(usage, 'a usage chunk arrived');
      assert.ok(usage.prompt_tokens > 0, 'prompt_tokens > 0');
      assert.ok(usage.completion_tokens > 0, 'completion_tokens > 0');
    });

    it('round-trips a tool call', async () => {
      const messages = [{ role: 'user', content: 'use the tool' }];
      const first = await client.chat.completions.create({ model, messages, tools: [weatherTool] });
      const choice = first.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      const call = choice.message.tool_calls[0];
      assert.equal(call.type, 'function');
      assert.equal(call.function.name, 'get_weather');
      assert.equal(JSON.parse(call.function.arguments).location, 'demo');
      assert.ok(call.id, 'the tool call has an id');

      messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: 'sunny, 21 C' });
      const second = await client.chat.completions.create({ model, messages, tools: [weatherTool] });
      assert.match(second.choices[0].message.content, /Tool result received/);
    });

    it('streams a tool call', async () => {
      const stream = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'use the tool' }],
        tools: [weatherTool],
        stream: true,
        stream_options: { include_usage: true },
      });
      let name = '';
      let args = '';
      let finishReason;
      for await (const chunk of stream) {
        for (const choice of chunk.choices) {
          for (const call of choice.delta?.tool_calls ?? []) {
            if (call.index !== 0) continue;
            name += call.function?.name ?? '';
            args += call.function?.arguments ?? '';
          }
          finishReason = choice.finish_reason ?? finishReason;
        }
      }
      assert.equal(name, 'get_weather');
      assert.equal(JSON.parse(args).location, 'demo');
      assert.equal(finishReason, 'tool_calls');
    });
  });
}

// A PDF the user attached: the upstream of every API gets it (the demo upstream names the files
// it received), so a session that holds one can fail over.
const PDF_BASE64 = Buffer.from('%PDF-1.4\n1 0 obj\n<</Type/Catalog>>\nendobj\n').toString('base64');
describe('a PDF in a chat', { timeout: TEST_TIMEOUT_MS }, () => {
  for (const model of ['sim-openai/gpt-sim', 'sim-anthropic/claude-sim', 'sim-responses/gpt-responses-sim']) {
    it(`reaches ${model} with its name`, async () => {
      const completion = await client.chat.completions.create({
        model,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'file', file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${PDF_BASE64}` } },
              { type: 'text', text: 'summarise it' },
            ],
          },
        ],
      });
      assert.match(completion.choices[0].message.content, /You said: summarise it \[files: report\.pdf \(application\/pdf\)\]/);
    });
  }
});

describe('model resolution', { timeout: TEST_TIMEOUT_MS }, () => {
  it('answers the route name "demo" and an alias of it', async () => {
    for (const model of ['demo', 'gpt-4o']) {
      const completion = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'ping' }],
      });
      assert.match(completion.choices[0].message.content, /You said: ping/, model);
    }
  });

  it('answers an unknown model with 404 NotFoundError', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'nope/nothing', messages: [{ role: 'user', content: 'ping' }] }),
      (error) => error instanceof OpenAI.NotFoundError && error.status === 404,
    );
  });
});

describe('malformed JSON', { timeout: TEST_TIMEOUT_MS }, () => {
  const broken = () =>
    new OpenAI({
      baseURL: `${gateway.baseUrl}/v1`,
      apiKey: 'demo-key',
      maxRetries: 0,
      timeout: SDK_TIMEOUT_MS,
      fetch: malformedJsonFetch,
    });

  it('/v1/chat/completions answers 400 BadRequestError', async () => {
    await assert.rejects(
      broken().chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'ping' }] }),
      (error) => error instanceof OpenAI.BadRequestError && error.status === 400,
    );
  });

  it('/v1/responses answers 400 BadRequestError', async () => {
    await assert.rejects(
      broken().responses.create({ model: 'demo', input: 'ping' }),
      (error) => error instanceof OpenAI.BadRequestError && error.status === 400,
    );
  });
});

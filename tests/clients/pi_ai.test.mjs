// @mariozechner/pi-ai's own providers (openai-completions, openai-responses,
// anthropic-messages) with a Model whose baseUrl points at the gateway, each
// answered by a simulated upstream of a different API. Also the pi native route.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { completeSimple, streamSimple } from '@mariozechner/pi-ai';
import { startGateway, TEST_TIMEOUT_MS } from './gateway.mjs';

let gateway;

before(async () => {
  gateway = await startGateway();
});

after(async () => {
  await gateway?.stop();
});

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a place',
  parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
};

// pi's API -> [route suffix, a gateway model served by another upstream API]
const cases = [
  ['openai-completions', '/v1', 'sim-anthropic/claude-sim'],
  ['openai-responses', '/v1', 'sim-google/gemini-sim'],
  ['anthropic-messages', '', 'sim-responses/gpt-responses-sim'],
];

function modelFor(api, suffix, id) {
  return {
    id,
    name: `${id} via Switchman`,
    api,
    provider: 'switchman',
    baseUrl: `${gateway.baseUrl}${suffix}`,
    reasoning: false,
    input: ['text', 'image'],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128000,
    maxTokens: 4096,
  };
}

const user = (text) => ({ role: 'user', content: text, timestamp: Date.now() });
const options = { apiKey: 'demo-key', maxRetries: 0 };

for (const [api, suffix, id] of cases) {
  describe(`pi-ai ${api} provider answered by ${id}`, { timeout: TEST_TIMEOUT_MS }, () => {
    it('completeSimple gets text, usage and stop reason', async () => {
      const message = await completeSimple(modelFor(api, suffix, id), { systemPrompt: 'be brief', messages: [user('ping')] }, options);
      assert.equal(message.stopReason, 'stop', message.errorMessage);
      const text = message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
      assert.match(text, /You said: ping/);
      assert.ok(message.usage.input > 0, 'input tokens');
      assert.ok(message.usage.output > 0, 'output tokens');
    });

    it('streamSimple streams text deltas then done', async () => {
      const s = streamSimple(modelFor(api, suffix, id), { messages: [user('ping')] }, options);
      const types = [];
      let text = '';
      for await (const event of s) {
        types.push(event.type);
        if (event.type === 'text_delta') text += event.delta;
      }
      assert.match(text, /You said: ping/);
      assert.equal(types.at(-1), 'done', types.join(','));
      assert.ok(types.filter((t) => t === 'text_delta').length > 1, 'more than one delta');
    });

    it('makes a tool call and reads the result back', async () => {
      const model = modelFor(api, suffix, id);
      const context = { messages: [user('use the tool please')], tools: [weatherTool] };
      const s = streamSimple(model, context, options);
      let sawToolcallEnd = false;
      for await (const event of s) {
        if (event.type === 'toolcall_end') sawToolcallEnd = true;
      }
      const first = await s.result();
      assert.equal(first.stopReason, 'toolUse', first.errorMessage);
      assert.ok(sawToolcallEnd, 'toolcall_end streamed');
      const call = first.content.find((b) => b.type === 'toolCall');
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(call.arguments, { location: 'demo' });
      context.messages.push(first, {
        role: 'toolResult',
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: 'text', text: 'sunny, 21 C' }],
        isError: false,
        timestamp: Date.now(),
      });
      const second = await completeSimple(model, context, options);
      assert.equal(second.stopReason, 'stop', second.errorMessage);
      const text = second.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
      assert.equal(text, 'Tool result received: sunny, 21 C');
    });
  });
}

describe('pi native route /v1/pi/stream', { timeout: TEST_TIMEOUT_MS }, () => {
  it('streams AssistantMessageEvent JSON ended by [DONE]', async () => {
    const response = await fetch(`${gateway.baseUrl}/v1/pi/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer demo-key' },
      body: JSON.stringify({
        model: modelFor('anthropic-messages', '', 'sim-openai/gpt-sim'),
        context: { messages: [user('ping')] },
      }),
    });
    assert.equal(response.status, 200);
    const body = await response.text();
    const data = body.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
    assert.equal(data.at(-1), '[DONE]');
    const events = data.slice(0, -1).map((d) => JSON.parse(d));
    assert.equal(events[0].type, 'start');
    const done = events.at(-1);
    assert.equal(done.type, 'done');
    assert.equal(done.reason, 'stop');
    assert.match(done.message.content[0].text, /You said: ping/);
  });

  it('answers stream:false with {message}', async () => {
    const response = await fetch(`${gateway.baseUrl}/v1/pi/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ modelId: 'sim-google/gemini-sim', context: { messages: [user('ping')] }, stream: false }),
    });
    assert.equal(response.status, 200);
    const { message } = await response.json();
    assert.equal(message.role, 'assistant');
    assert.equal(message.api, 'google-generative-ai');
    assert.match(message.content[0].text, /You said: ping/);
  });
});

describe('query strings on routes', { timeout: TEST_TIMEOUT_MS }, () => {
  it('accepts /v1/messages?beta=true as Claude Code sends it', async () => {
    const response = await fetch(`${gateway.baseUrl}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'demo-key' },
      body: JSON.stringify({ model: 'sim-google/gemini-sim', max_tokens: 64, messages: [{ role: 'user', content: 'ping' }] }),
    });
    assert.equal(response.status, 200);
    const message = await response.json();
    assert.equal(message.type, 'message');
    assert.match(message.content[0].text, /You said: ping/);
  });
});

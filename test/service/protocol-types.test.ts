// A drift between the protocol and its users is a compile error: `npm run typecheck` checks this file,
// each `@ts-expect-error` below fails the typecheck if the line it marks ever compiles.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HandlerMap } from '../../src/commands/handlers';
import { Command, CommandResults, CommandSchemas, type EnvelopeOf, type ResultOf } from '../../src/protocol';
import type { ServiceConnection } from '../../src/web/connection';

test('every command has a result schema, and no result schema lacks its command', () => {
  const commands = Command.options.map((schema) => schema.shape.type.value).sort();
  assert.deepEqual(Object.keys(CommandResults).sort(), commands);
});

test("each key of CommandSchemas (the dispatcher's lookup) is the type its schema parses, and the union holds exactly those", () => {
  for (const [type, schema] of Object.entries(CommandSchemas)) assert.equal(schema.shape.type.value, type);
  assert.deepEqual(Command.options.map((schema) => schema.shape.type.value).sort(), Object.keys(CommandSchemas).sort());
});

test('handlers and clients are held to the result types (checked by tsc)', () => {
  // A handler answering another shape does not compile.
  // @ts-expect-error `tool` is not list_tools' result
  const wrongHandler: HandlerMap['list_tools'] = async () => ({ tool: [] });
  // A client reading a field its command does not answer does not compile.
  const readMode = (answer: EnvelopeOf<'get_config'>) => (answer.status === 'ok' ? answer.data.permission_mode : undefined);
  // @ts-expect-error get_config answers no `mode`
  const readWrong = (answer: ResultOf<'get_config'>) => answer.mode;
  // The UI's request is typed by the frame it sends: a chat's answer has `response`, not `messages`.
  const chatReply = async (connection: ServiceConnection) => {
    const answer = await connection.request({ type: 'chat', message: 'hi' });
    // @ts-expect-error chat answers no `messages`
    return answer.status === 'ok' ? answer.data.messages : answer.error;
  };
  // @ts-expect-error a command the protocol does not have
  const unknownCommand = (connection: ServiceConnection) => connection.request({ type: 'get_everything' });
  const config = {
    provider: 'openai',
    model: 'm',
    temperature: 0.2,
    permission_mode: 'ask',
    base_url: null,
    api_key_set: false,
    permission_rules: { allow: [] as string[], deny: [] as string[] },
    permission_timeout_seconds: 1800,
    system_prompt_mode: 'add',
  } as const;
  assert.equal(readMode({ status: 'ok', data: config }), 'ask');
  assert.equal(readMode({ status: 'error', code: 'server_error', error: 'down' }), undefined);
  // The rest are only compiled, never run.
  void [wrongHandler, readWrong, chatReply, unknownCommand];
});

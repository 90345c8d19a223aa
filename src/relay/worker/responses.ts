import { JSON_HEADERS, type RelayAnswer } from '../http';

export function answerResponse(answer: RelayAnswer): Response {
  return new Response(JSON.stringify(answer.body), { status: answer.status, headers: JSON_HEADERS });
}

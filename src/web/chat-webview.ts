/** The editor's chat view (webview): the chat app over postMessage to the extension. */
import { ChatApp } from './chat/app';
import { PostMessageTransport } from './transport-postmessage';

const transport = new PostMessageTransport();
const root = document.getElementById('app') ?? document.body.appendChild(document.createElement('div'));

new ChatApp({
  transport,
  root,
  // The webview's own state survives the view being hidden and the window reloading.
  memory: {
    load: () => {
      const state = transport.api.getState() as { conversationId?: unknown } | undefined;
      return typeof state?.conversationId === 'string' ? state.conversationId : undefined;
    },
    save: (conversationId) => transport.api.setState({ conversationId }),
  },
});

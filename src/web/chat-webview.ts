/** The editor's chat view (webview): the chat app over postMessage to the extension. */
import { ChatApp } from './chat/app';
import { PostMessageConnection } from './postmessage-connection';

const connection = new PostMessageConnection();
const root = document.getElementById('app') ?? document.body.appendChild(document.createElement('div'));

new ChatApp({
  connection,
  root,
  // The webview's own state survives the view being hidden and the window reloading.
  memory: {
    load: () => {
      const state = connection.api.getState() as { conversationId?: unknown } | undefined;
      return typeof state?.conversationId === 'string' ? state.conversationId : undefined;
    },
    save: (conversationId) => connection.api.setState({ conversationId }),
  },
});

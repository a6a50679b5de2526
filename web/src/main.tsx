// The Baton dashboard: a token from the URL fragment or this tab's storage, checked with
// GET /v1/whoami, then the app.
import { render } from 'preact';
import { ApiError, login, logout, session, showError, storeToken, storedToken } from './api';
import { App } from './app';
import { takeTokenFromUrl } from './router';
import './style.css';

const root = document.getElementById('app')!;

async function boot(): Promise<void> {
  const fromUrl = takeTokenFromUrl();
  if (fromUrl) storeToken(fromUrl);
  const token = storedToken();
  if (!token) {
    render(<App checking={false} />, root);
    return;
  }
  render(<App checking />, root);
  try {
    await login(token);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) logout(e);
    else showError(e);
    storeToken(e instanceof ApiError && e.status === 401 ? null : token);
  }
  render(<App checking={false} />, root);
}

// A link with a token opened in a tab that shows the dashboard already changes only the hash.
window.addEventListener('hashchange', () => {
  const token = takeTokenFromUrl();
  if (!token) return;
  if (session.get()?.token === token) return;
  logout();
  storeToken(token);
  login(token).catch((e: unknown) => {
    if (e instanceof ApiError && e.status === 401) logout(e);
    else showError(e);
  });
});

void boot();

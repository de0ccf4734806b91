import { useEffect, useRef, useState, type ReactNode } from 'react';
import { ErrorBoundary } from './components/ui.tsx';
import { BillingPage } from './pages/Billing.tsx';
import { EndpointDetailPage, NewEndpointPage } from './pages/EndpointDetail.tsx';
import { EndpointsPage } from './pages/Endpoints.tsx';
import { KeysPage } from './pages/Keys.tsx';
import { RegistryPage } from './pages/Registry.tsx';
import { SecretsPage } from './pages/Secrets.tsx';
import { SignIn } from './pages/SignIn.tsx';
import { TemplatesPage } from './pages/Templates.tsx';
import { VolumesPage } from './pages/Volumes.tsx';
import { useTitle } from './hooks.ts';
import { Link, match, navigate, usePath } from './router.tsx';
import { SessionProvider, useSessionState } from './session.tsx';

const NAV = [
  { to: '/endpoints', label: 'Endpoints' },
  { to: '/templates', label: 'Templates' },
  { to: '/volumes', label: 'Network volumes' },
  { to: '/registry', label: 'Registry credentials' },
  { to: '/secrets', label: 'Secrets' },
  { to: '/keys', label: 'API keys' },
  { to: '/billing', label: 'Billing' },
];

function NotFound() {
  // Without it the tab and a screen reader went on naming the page navigated from.
  useTitle('Page not found');
  return (
    <>
      <h1>Page not found</h1>
      <p>
        There is no console page here. Go to the <Link to="/endpoints">endpoints</Link>.
      </p>
    </>
  );
}

function route(path: string): ReactNode {
  if (path === '/') return <EndpointsPage />;
  if (path === '/endpoints') return <EndpointsPage />;
  if (path === '/endpoints/new') return <NewEndpointPage />;
  const ep = match('/endpoints/:id/:tab?', path);
  if (ep) return <EndpointDetailPage key={ep['id']} id={ep['id']!} tab={ep['tab']} />;
  if (path === '/templates') return <TemplatesPage />;
  if (path === '/volumes') return <VolumesPage />;
  if (path === '/registry') return <RegistryPage />;
  if (path === '/secrets') return <SecretsPage />;
  if (path === '/keys') return <KeysPage />;
  if (path === '/billing') return <BillingPage />;
  return <NotFound />;
}

function Shell() {
  const path = usePath();
  const { session } = useSessionState();
  // The menu (narrow screens) is open for the page it was opened on: navigating closes it.
  const [menuFor, setMenuFor] = useState<string | null>(null);
  const menuOpen = menuFor === path;
  const main = useRef<HTMLElement>(null);
  const shown = useRef(path);

  // After a client-side navigation, move focus to the page (as a full page load would).
  useEffect(() => {
    if (shown.current === path) return;
    shown.current = path;
    window.scrollTo(0, 0);
    main.current?.focus({ preventScroll: true });
  }, [path]);

  if (!session) return <SignIn />;
  const section = '/' + (path.split('/')[1] ?? '');
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/endpoints" className="brand">
          <span className="brand-mark" aria-hidden="true" /> Wharf
        </Link>
        <button
          type="button"
          className="menu-button"
          aria-expanded={menuOpen}
          aria-controls="primary-nav"
          onClick={() => setMenuFor(menuOpen ? null : path)}
        >
          Menu
        </button>
        <nav id="primary-nav" aria-label="Main" className={menuOpen ? 'open' : undefined}>
          <ul>
            {NAV.map((n) => (
              <li key={n.to}>
                <Link
                  to={n.to}
                  aria-current={section === n.to || (n.to === '/endpoints' && path === '/') ? 'page' : undefined}
                >
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
          <button
            type="button"
            className="button-small signout"
            onClick={() => {
              session.signOut();
              navigate('/', { replace: true });
            }}
          >
            Sign out
          </button>
        </nav>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        <ErrorBoundary resetKey={path}>{route(path)}</ErrorBoundary>
      </main>
    </>
  );
}

export function App() {
  return (
    <SessionProvider>
      <Shell />
    </SessionProvider>
  );
}

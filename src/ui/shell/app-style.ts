// CSS of <tp-app>: the header with the views and the status, the two-column layout, cards, banners, the run's totals.
import { css } from 'lit';

/** The page shell's styles (panelStyles comes first). */
export const appStyles = css`
  :host {
    font-size: 16px;
    background: #f7f9fc;
    min-height: 100vh;
  }
  header {
    display: flex;
    flex-wrap: wrap;
    align-items: center;
    gap: 8px 24px;
    padding: 10px 18px;
    background: #0b2b55;
    color: #fff;
  }
  h1 {
    font-size: 22px;
    margin: 0;
  }
  nav {
    display: flex;
    gap: 4px;
  }
  nav a {
    color: #dbe7f7;
    text-decoration: none;
    padding: 4px 10px;
    border-radius: 6px;
    font-weight: 600;
  }
  nav a[aria-current='page'] {
    background: #fff;
    color: #0b2b55;
  }
  .status {
    margin-left: auto;
    font-size: 15px;
    color: #f3f6fb;
    min-width: 18em;
  }
  .status[data-busy='true']::before {
    content: '';
    display: inline-block;
    width: 12px;
    height: 12px;
    margin-right: 8px;
    border: 3px solid #f2b632;
    border-top-color: transparent;
    border-radius: 50%;
    animation: spin 0.8s linear infinite;
    vertical-align: -2px;
  }
  @keyframes spin {
    to {
      transform: rotate(360deg);
    }
  }
  .layout {
    display: grid;
    grid-template-columns: 300px minmax(0, 1fr);
    gap: 14px;
    padding: 12px 18px;
  }
  aside {
    min-width: 0;
  }
  main {
    min-width: 0;
    display: flex;
    flex-direction: column;
    gap: 12px;
  }
  .card {
    background: #fff;
    border: 1px solid #d5dbe3;
    border-radius: 10px;
    padding: 10px 14px;
  }
  .banner {
    margin: 0 0 6px;
    padding: 6px 10px;
    border-radius: 6px;
    font-size: 15px;
  }
  .banner.warn {
    background: #fff4d6;
    border-left: 5px solid #c98a00;
  }
  .banner.error {
    background: #fdecee;
    border-left: 5px solid #a3000f;
    color: #5c0008;
  }
  .banner.info {
    background: #e8f0fb;
    border-left: 5px solid #2a6cc4;
  }
  .sources {
    margin: 0 0 6px;
    font-size: 15px;
  }
  .top {
    display: flex;
    flex-wrap: wrap;
    gap: 12px 24px;
    align-items: flex-start;
    justify-content: space-between;
  }
  .totals {
    font-size: 15px;
    flex: 1 1 360px;
  }
  tp-oracle-badge {
    flex: 0 1 auto;
  }
  tp-moe-plan {
    flex: 1 1 100%;
  }
  .totals strong {
    font-size: 18px;
  }
  .stale {
    opacity: 0.55;
    transition: opacity 0.2s;
  }
  .panels {
    display: grid;
    grid-template-columns: minmax(0, 1fr) 440px;
    gap: 12px;
  }
  @media (max-width: 1600px) {
    .panels {
      grid-template-columns: 1fr;
    }
  }
`;

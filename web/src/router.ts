import { createRouter, createWebHistory } from 'vue-router';
import { session } from './api';

export const router = createRouter({
  history: createWebHistory(),
  routes: [
    { path: '/', name: 'home', component: () => import('./pages/HomePage.vue') },
    { path: '/login', name: 'login', component: () => import('./pages/LoginPage.vue') },
    { path: '/shops/type/:typeId', name: 'shops', component: () => import('./pages/ShopListPage.vue'), props: true },
    { path: '/shops/:id', name: 'shop', component: () => import('./pages/ShopDetailPage.vue'), props: true },
    { path: '/orders', name: 'orders', component: () => import('./pages/OrdersPage.vue'), meta: { auth: true } },
    { path: '/me', name: 'me', component: () => import('./pages/ProfilePage.vue'), meta: { auth: true } },
    { path: '/blogs/new', name: 'new-blog', component: () => import('./pages/WriteBlogPage.vue'), meta: { auth: true } },
    { path: '/blogs/:id', name: 'blog', component: () => import('./pages/BlogPage.vue'), props: true, meta: { auth: true } },
    { path: '/feed', name: 'feed', component: () => import('./pages/FeedPage.vue'), meta: { auth: true } },
    { path: '/admin', name: 'admin', component: () => import('./pages/AdminPage.vue'), meta: { auth: true } },
    { path: '/:rest(.*)*', name: 'not-found', component: () => import('./pages/NotFoundPage.vue') },
  ],
});

// Pages whose API calls all need a session go to the login page first (no 401 round trip).
router.beforeEach((to) => {
  if (to.meta.auth && !session.token) return { name: 'login', query: { redirect: to.fullPath } };
  return true;
});

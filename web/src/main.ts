import { createApp } from 'vue';
import App from './App.vue';
import { router } from './router';
import { setUnauthorizedHandler } from './api';
import { toastError } from './toast';
import './style.css';

setUnauthorizedHandler(() => {
  const here = router.currentRoute.value;
  if (here.name !== 'login') void router.push({ name: 'login', query: { redirect: here.fullPath } });
});

const app = createApp(App);
app.config.errorHandler = (error) => {
  // An ApiError already showed its toast; anything else is a bug worth seeing.
  if ((error as { status?: unknown }).status === undefined) toastError(String((error as { message?: unknown }).message ?? error));
};
app.use(router).mount('#app');

/* A shared object with thread-local storage, for tlsmany: dlopened, its TLS block is allocated by the
 * loader in each thread that first touches it. */
__thread char tls_counter;

char *get(void)
{
	tls_counter++;
	return &tls_counter;
}

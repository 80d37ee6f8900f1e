/* leafprog.c — exec'ed by forks.c: calls leaf2() 4 times. */
__attribute__((noipa)) void leaf2(void) { }
int main(void) { for (int i = 0; i < 4; i++) leaf2(); return 3; }
